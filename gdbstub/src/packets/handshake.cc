#include "packets/handshake.h"

#include "packets/libraries_svr4.h"
#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {
namespace {

bool Offered(const std::vector<ClientFeature>& features, std::string_view name) {
  for (const ClientFeature& f : features) {
    if (f.name == name) return f.kind == ClientFeature::Kind::kSupported;
  }
  return false;
}

}  // namespace

std::optional<std::vector<ClientFeature>> ParseQSupported(std::string_view args) {
  std::vector<ClientFeature> features;
  if (args.empty()) return features;
  if (!args.starts_with(':')) return std::nullopt;
  args.remove_prefix(1);
  while (!args.empty()) {
    std::size_t end = args.find(';');
    std::string_view item = args.substr(0, end);
    args = end == std::string_view::npos ? std::string_view() : args.substr(end + 1);
    if (item.empty()) continue;
    ClientFeature feature;
    if (std::size_t eq = item.find('='); eq != std::string_view::npos) {
      feature = {item.substr(0, eq), ClientFeature::Kind::kValue, item.substr(eq + 1)};
    } else if (item.ends_with('+')) {
      feature = {item.substr(0, item.size() - 1), ClientFeature::Kind::kSupported, {}};
    } else if (item.ends_with('-')) {
      feature = {item.substr(0, item.size() - 1), ClientFeature::Kind::kUnsupported, {}};
    } else if (item.ends_with('?')) {
      feature = {item.substr(0, item.size() - 1), ClientFeature::Kind::kQuery, {}};
    } else {
      return std::nullopt;
    }
    features.push_back(feature);
  }
  return features;
}

std::string QSupportedReply(Target& target, std::size_t packet_size) {
  std::string out = "PacketSize=";
  AppendHexNumber(out, packet_size);
  out += ";QStartNoAckMode+;qXfer:features:read+";
  if (!target.auxv().empty()) out += ";qXfer:auxv:read+";
  if (!target.exec_file().empty()) out += ";qXfer:exec-file:read+";
  out += ";qXfer:threads:read+;multiprocess+";
  if (CanListLibrariesSvr4(target)) out += ";qXfer:libraries-svr4:read+";
  if (target.breakpoints() != nullptr) out += ";swbreak+;hwbreak+";
  out += ";vContSupported+";
  if (target.reverse_execution() != nullptr) out += ";ReverseStep+;ReverseContinue+";
  if (target.signals() != nullptr) {
    out += ";QPassSignals+;QProgramSignals+;QCatchSyscalls+;qXfer:siginfo:read+";
    // A trace with notes may hold several images (execve).
    out += ";exec-events+";
  }
  // Only for frames that know just what they collected (a tfile): gdb then
  // shows memory outside a frame's collection as <unavailable>, where a
  // full-state trace's frames know everything.
  if (target.trace_frames() != nullptr &&
      target.trace_frames()->tracepoint_definitions() != nullptr) {
    out += ";qXfer:traceframe-info:read+";
  }
  // Deliberately never: binary-upload+ (changes `x` replies),
  // ConditionalBreakpoints+ (we do not evaluate agent expressions).
  return out;
}

Reply HandleQSupported(Session& session, std::string_view args) {
  auto features = ParseQSupported(args);
  if (!features) return Reply::BadArguments("qSupported: malformed feature list");
  Negotiated& n = session.state().negotiated;
  bool breakpoints = session.target().breakpoints() != nullptr;
  n.multiprocess = Offered(*features, "multiprocess");
  n.swbreak = breakpoints && Offered(*features, "swbreak");
  n.hwbreak = breakpoints && Offered(*features, "hwbreak");
  n.exec_events = Offered(*features, "exec-events");
  return Reply::Packet(QSupportedReply(session.target(), session.options().packet_size));
}

Reply HandleStartNoAckMode(Session& session, std::string_view) {
  session.StartNoAckModeAfterReply();
  return Reply::Ok();
}

Reply HandleThreadSuffixSupported(Session& session, std::string_view) {
  session.state().negotiated.thread_suffix = true;
  return Reply::Ok();
}

Reply HandleListThreadsInStopReply(Session& session, std::string_view) {
  session.state().negotiated.list_threads_in_stop_reply = true;
  return Reply::Ok();
}

Reply HandleEnableErrorStrings(Session& session, std::string_view) {
  session.state().negotiated.error_strings = true;
  return Reply::Ok();
}

}  // namespace backstep::gdbstub
