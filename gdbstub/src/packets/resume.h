// Run control: vCont?, vCont;..., c, C, s, S, bc, bs, and `?` (docs/protocol.md §4-§7).
//
// Every resume calls the target synchronously and answers with the stop
// reply of FormatStopReply (stop_reason.h). Signals in C/S/vCont are ignored
// (a recording cannot deliver them); resuming at an address (`c<addr>`) is
// refused, as is any resume while a trace frame is selected (gdb refuses
// those itself). After a stop the Hg thread follows the stopping thread:
// gdb records the stop reply's thread as the stub's general thread.
//
// vCont: the first step action decides (`vCont;s:p1.1;c:p1.-1` steps thread
// 1; the others are "free", and a recording advances only the stepping
// thread); without a step action it is a continue. A range step
// (`vCont;r<start>,<end>:p1.1;c:p1.-1`, gdb's `next`/`step` when `vCont?`
// lists `r`) is a step action that goes on while the pc stays in the range
// (capabilities.h, RangeStepping).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "backstep/gdbstub/capabilities.h"
#include "packets/thread_id.h"
#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

struct VContAction {
  ResumeKind kind = ResumeKind::kContinue;
  std::optional<std::uint8_t> signal;  // C/S
  std::optional<ThreadSpec> thread;    // nullopt: every thread not named before
  // r<start>,<end>: kStep while the pc stays in [first, second).
  std::optional<std::pair<std::uint64_t, std::uint64_t>> range;
};

// The actions after "vCont;": "s:p1.1;c:p1.-1". Only c, C<sig>, s, S<sig>
// and r<start>,<end> (we advertise `vCont;c;C;s;S;r`); nullopt for anything
// else.
std::optional<std::vector<VContAction>> ParseVCont(std::string_view args);

// The arguments of c/s ("[<addr>]") and C/S ("<sig>[;<addr>]").
struct ResumeArgs {
  std::optional<std::uint8_t> signal;  // C/S only
  std::optional<std::uint64_t> addr;   // resume at this address (refused)
  bool operator==(const ResumeArgs&) const = default;
};
std::optional<ResumeArgs> ParseResumeArgs(std::string_view args);
std::optional<ResumeArgs> ParseSignalResumeArgs(std::string_view args);

Reply HandleVContQuery(Session& session, std::string_view args);
Reply HandleVCont(Session& session, std::string_view args);
Reply HandleContinue(Session& session, std::string_view args);         // c
Reply HandleContinueSignal(Session& session, std::string_view args);   // C
Reply HandleStep(Session& session, std::string_view args);             // s
Reply HandleStepSignal(Session& session, std::string_view args);       // S
Reply HandleReverseContinue(Session& session, std::string_view args);  // bc
Reply HandleReverseStep(Session& session, std::string_view args);      // bs
Reply HandleStopQuery(Session& session, std::string_view args);        // ?

}  // namespace backstep::gdbstub
