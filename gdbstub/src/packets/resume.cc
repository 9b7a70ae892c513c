#include "packets/resume.h"

#include "packets/libraries_svr4.h"
#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {
namespace {

enum class Direction : unsigned char { kForward, kBackward };

Reply Resume(Session& session, Direction direction, ResumeKind kind,
             std::optional<core::ThreadId> thread,
             std::optional<std::pair<std::uint64_t, std::uint64_t>> range = std::nullopt) {
  if (session.state().selected_frame) {
    return Reply::Fail("cannot resume while looking at a trace frame");
  }
  Target& target = session.target();
  if (session.TakePendingInterrupt()) {
    // An unanswered 0x03: stop here, as a pending SIGINT would.
    session.NoteInterruptAnswered();
    session.state().last_stop = Interrupted{};
    session.state().general_thread.reset();
    return Reply::Packet(FormatStopReply(Interrupted{}, target, session.stop_reply_options()));
  }
  const std::atomic<bool>* interrupt = session.interrupt_flag();
  auto run = [&]() -> core::Expected<StopReason> {
    if (range)
      return target.range_stepping()->RangeStep(range->first, range->second, thread, interrupt);
    if (direction == Direction::kForward) return target.Resume(kind, thread, interrupt);
    return target.reverse_execution()->ResumeBackward(kind, thread, interrupt);
  };
  // Steps are bounded and run inline; continues and range steps may scan the
  // trace: the session's runner lets the transport watch for 0x03 meanwhile.
  auto stop = kind == ResumeKind::kStep && !range ? run() : session.RunLongResume(run);
  if (!stop.ok()) return Reply::FromStatus(stop.status());
  if (std::holds_alternative<Interrupted>(*stop)) session.NoteInterruptAnswered();
  session.state().last_stop = *stop;
  session.state().general_thread.reset();  // gdb: the stopping thread is now Hg
  StopReplyOptions options = session.stop_reply_options();
  options.libraries_changed = NoteLibrariesForStop(session);
  return Reply::Packet(FormatStopReply(*stop, target, options));
}

// c/s/bc/bs use the Hc thread.
Reply ResumeHc(Session& session, Direction direction, ResumeKind kind,
               const std::optional<ResumeArgs>& args) {
  if (!args) return Reply::BadArguments("resume: malformed arguments");
  if (args->addr) return Reply::Fail("resume: cannot resume at another address in a recording");
  std::optional<core::ThreadId> thread = session.state().continue_thread;
  if (thread && !session.IsLiveThread(*thread)) thread.reset();
  return Resume(session, direction, kind, thread);
}

std::optional<VContAction> ParseAction(std::string_view text) {
  VContAction action;
  std::size_t colon = text.find(':');
  std::string_view op = text.substr(0, colon);
  if (colon != std::string_view::npos) {
    action.thread = ParseThreadSpec(text.substr(colon + 1));
    if (!action.thread) return std::nullopt;
  }
  if (op.empty()) return std::nullopt;
  char letter = op[0];
  op.remove_prefix(1);
  if (letter == 'C' || letter == 'S') {
    auto signal = ParseHexU64(op);
    if (!signal || *signal > 0xff) return std::nullopt;
    action.signal = static_cast<std::uint8_t>(*signal);
  } else if (letter == 'r') {
    const std::size_t comma = op.find(',');
    if (comma == std::string_view::npos) return std::nullopt;
    auto start = ParseHexU64(op.substr(0, comma));
    auto end = ParseHexU64(op.substr(comma + 1));
    if (!start || !end || *end < *start) return std::nullopt;
    action.range.emplace(*start, *end);
    action.kind = ResumeKind::kStep;
    return action;
  } else if (!op.empty() || (letter != 'c' && letter != 's')) {
    return std::nullopt;
  }
  action.kind = (letter == 's' || letter == 'S') ? ResumeKind::kStep : ResumeKind::kContinue;
  return action;
}

}  // namespace

std::optional<std::vector<VContAction>> ParseVCont(std::string_view args) {
  std::vector<VContAction> actions;
  while (true) {
    std::size_t semi = args.find(';');
    auto action = ParseAction(args.substr(0, semi));
    if (!action) return std::nullopt;
    actions.push_back(*action);
    if (semi == std::string_view::npos) return actions;
    args.remove_prefix(semi + 1);
  }
}

std::optional<ResumeArgs> ParseResumeArgs(std::string_view args) {
  if (args.empty()) return ResumeArgs{};
  auto addr = ParseHexU64(args);
  if (!addr) return std::nullopt;
  return ResumeArgs{std::nullopt, *addr};
}

std::optional<ResumeArgs> ParseSignalResumeArgs(std::string_view args) {
  std::size_t semi = args.find(';');
  auto signal = ParseHexU64(args.substr(0, semi));
  if (!signal || *signal > 0xff) return std::nullopt;
  ResumeArgs result{static_cast<std::uint8_t>(*signal), std::nullopt};
  if (semi == std::string_view::npos) return result;
  result.addr = ParseHexU64(args.substr(semi + 1));
  if (!result.addr) return std::nullopt;
  return result;
}

Reply HandleVContQuery(Session& session, std::string_view) {
  return Reply::Packet(session.target().range_stepping() ? "vCont;c;C;s;S;r" : "vCont;c;C;s;S");
}

Reply HandleVCont(Session& session, std::string_view args) {
  auto actions = ParseVCont(args);
  if (!actions) return Reply::BadArguments("vCont: malformed or unsupported action");
  for (const VContAction& action : *actions) {
    if (action.kind != ResumeKind::kStep) continue;
    std::optional<core::ThreadId> thread;
    if (action.thread && action.thread->tid.value()) {
      thread = session.ResolveThread(*action.thread);
      if (!thread) return Reply::Fail("vCont: no such thread");
    }
    if (action.range) {
      if (!session.target().range_stepping()) {
        return Reply::BadArguments("vCont: range stepping is not supported");
      }
      return Resume(session, Direction::kForward, ResumeKind::kStep, thread, action.range);
    }
    return Resume(session, Direction::kForward, ResumeKind::kStep, thread);
  }
  return Resume(session, Direction::kForward, ResumeKind::kContinue, std::nullopt);
}

Reply HandleContinue(Session& session, std::string_view args) {
  return ResumeHc(session, Direction::kForward, ResumeKind::kContinue, ParseResumeArgs(args));
}

Reply HandleContinueSignal(Session& session, std::string_view args) {
  return ResumeHc(session, Direction::kForward, ResumeKind::kContinue, ParseSignalResumeArgs(args));
}

Reply HandleStep(Session& session, std::string_view args) {
  return ResumeHc(session, Direction::kForward, ResumeKind::kStep, ParseResumeArgs(args));
}

Reply HandleStepSignal(Session& session, std::string_view args) {
  return ResumeHc(session, Direction::kForward, ResumeKind::kStep, ParseSignalResumeArgs(args));
}

Reply HandleReverseContinue(Session& session, std::string_view) {
  return ResumeHc(session, Direction::kBackward, ResumeKind::kContinue, ResumeArgs{});
}

Reply HandleReverseStep(Session& session, std::string_view) {
  return ResumeHc(session, Direction::kBackward, ResumeKind::kStep, ResumeArgs{});
}

Reply HandleStopQuery(Session& session, std::string_view) {
  return Reply::Packet(
      FormatStopReply(session.state().last_stop, session.target(), session.stop_reply_options()));
}

}  // namespace backstep::gdbstub
