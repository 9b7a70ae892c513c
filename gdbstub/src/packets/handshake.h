// Connection handshake: qSupported, QStartNoAckMode and LLDB's Q... opt-ins
// (docs/protocol.md §2, §3, §11).
//
// qSupported is answered from the target's capabilities: a feature is
// advertised only when the target implements it. Negotiated features
// (multiprocess, swbreak, hwbreak) are those both sides named; every
// qSupported renegotiates them (LLDB 22 sends it twice).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;
class Target;

// One entry of the client's qSupported list: "swbreak+", "fork-events-",
// "xmlRegisters=i386", "foo?".
struct ClientFeature {
  enum class Kind : unsigned char { kSupported, kUnsupported, kQuery, kValue };
  std::string_view name;
  Kind kind = Kind::kSupported;
  std::string_view value;  // for kValue
  bool operator==(const ClientFeature&) const = default;
};

// Parses the arguments of qSupported: "" or ":<feature>;<feature>...".
// Empty entries are skipped; nullopt for an entry without a +, -, ? or =.
std::optional<std::vector<ClientFeature>> ParseQSupported(std::string_view args);

// Our qSupported reply for `target` with `packet_size`.
std::string QSupportedReply(Target& target, std::size_t packet_size);

Reply HandleQSupported(Session& session, std::string_view args);
Reply HandleStartNoAckMode(Session& session, std::string_view args);
Reply HandleThreadSuffixSupported(Session& session, std::string_view args);
Reply HandleListThreadsInStopReply(Session& session, std::string_view args);
Reply HandleEnableErrorStrings(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
