// Thread selection and thread lists: Hg/Hc, T<id>, qfThreadInfo /
// qsThreadInfo, qC, qThreadExtraInfo (docs/protocol.md §4). The list describes the
// threads at the current position.
//
//   Hg<id>   thread for g/p (0 or -1: the current thread)      OK / E01
//   Hc<id>   thread for c/s/bc/bs (0 or -1: any)               OK / E01
//   T<id>    alive?                                            OK / E01
//   qfThreadInfo  m<id>,<id>...  (as many as fit), qsThreadInfo  m... / l
//   qC            QC<id>
//   qThreadExtraInfo,<id>  hex of the thread's name
#pragma once

#include <optional>
#include <string_view>

#include "packets/thread_id.h"
#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

struct SetThreadRequest {
  enum class Op : unsigned char { kGeneral, kContinue };  // Hg / Hc
  Op op = Op::kGeneral;
  ThreadSpec thread;
};

// The arguments after "H": "g<id>" or "c<id>".
std::optional<SetThreadRequest> ParseSetThread(std::string_view args);

Reply HandleSetThread(Session& session, std::string_view args);
Reply HandleThreadAlive(Session& session, std::string_view args);
Reply HandleFirstThreadInfo(Session& session, std::string_view args);
Reply HandleNextThreadInfo(Session& session, std::string_view args);
Reply HandleCurrentThread(Session& session, std::string_view args);
Reply HandleThreadExtraInfo(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
