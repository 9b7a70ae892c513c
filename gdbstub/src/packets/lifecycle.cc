#include "packets/lifecycle.h"

#include "backstep/gdbstub/stop_reason.h"
#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {

std::optional<DetachRequest> ParseDetach(std::string_view args) {
  if (args.empty()) return DetachRequest{};
  if (!args.starts_with(';')) return std::nullopt;
  auto pid = ParseHexU64(args.substr(1));
  if (!pid) return std::nullopt;
  return DetachRequest{*pid};
}

Reply HandleAttached(Session&, std::string_view) { return Reply::Packet("1"); }

Reply HandleDetach(Session& session, std::string_view args) {
  if (!ParseDetach(args)) return Reply::BadArguments("D: malformed arguments");
  session.Finish();
  return Reply::Ok();
}

Reply HandleVKill(Session& session, std::string_view args) {
  if (!ParseHexU64(args)) return Reply::BadArguments("vKill: malformed pid");
  if (!session.state().negotiated.extended) session.Finish();
  return Reply::Ok();
}

Reply HandleKill(Session& session, std::string_view) {
  session.Finish();
  // The kill acknowledgement ("killed by signal 9") LLDB waits for; it is not
  // a stop reply, so it does not go through FormatStopReply.
  return Reply::Packet("X09");
}

Reply HandleExtendedMode(Session& session, std::string_view) {
  session.state().negotiated.extended = true;
  return Reply::Ok();
}

namespace {

// Back to the first position, as a fresh run would be.
core::Status RestartSession(Session& session) {
  BACKSTEP_RETURN_IF_ERROR(session.target().Restart());
  session.state().last_stop = DoneStep{};
  session.state().selected_frame.reset();
  return core::Status::Ok();
}

}  // namespace

Reply HandleRun(Session& session, std::string_view) {
  // Whatever program and arguments gdb names, the run is the recorded one.
  if (core::Status status = RestartSession(session); !status.ok()) {
    return Reply::FromStatus(status);
  }
  return Reply::Packet(
      FormatStopReply(session.state().last_stop, session.target(), session.stop_reply_options()));
}

Reply HandleRestart(Session& session, std::string_view) {
  if (!session.state().negotiated.extended) return Reply::Empty();
  // `R` has no reply, not even an error: a failed restart leaves the
  // position where it was, which the client's next `?` shows.
  (void)RestartSession(session);
  return Reply::None();
}

}  // namespace backstep::gdbstub
