#include "packets/trace_frames.h"

#include <limits>

#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {
namespace {

// gdb prints frame and tracepoint numbers (C ints) with %x: -1 is ffffffff.
constexpr std::uint64_t kNoFrame = 0xffffffff;
constexpr std::uint64_t kMaxNumber = std::numeric_limits<std::int32_t>::max();

std::optional<std::pair<core::Address, core::Address>> ParseBounds(std::string_view text) {
  std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto lo = ParseHexU64(text.substr(0, colon));
  auto hi = ParseHexU64(text.substr(colon + 1));
  if (!lo || !hi) return std::nullopt;
  return std::pair(*lo, *hi);
}

}  // namespace

std::optional<QTFrameRequest> ParseQTFrame(std::string_view args) {
  if (args.starts_with("pc:")) {
    auto pc = ParseHexU64(args.substr(3));
    if (!pc) return std::nullopt;
    return QTFrameRequest{FrameByPc{*pc}};
  }
  if (args.starts_with("tdp:")) {
    auto tracepoint = ParseHexU64(args.substr(4));
    if (!tracepoint || *tracepoint > kMaxNumber) return std::nullopt;
    return QTFrameRequest{FrameByTracepoint{static_cast<std::uint32_t>(*tracepoint)}};
  }
  if (args.starts_with("range:")) {
    auto bounds = ParseBounds(args.substr(6));
    if (!bounds) return std::nullopt;
    return QTFrameRequest{FrameInRange{bounds->first, bounds->second}};
  }
  if (args.starts_with("outside:")) {
    auto bounds = ParseBounds(args.substr(8));
    if (!bounds) return std::nullopt;
    return QTFrameRequest{FrameOutsideRange{bounds->first, bounds->second}};
  }
  if (args == "-1") return QTFrameRequest{std::nullopt};
  auto frame = ParseHexU64(args);
  if (!frame) return std::nullopt;
  if (*frame == kNoFrame) return QTFrameRequest{std::nullopt};
  if (*frame > kMaxNumber) return std::nullopt;
  return QTFrameRequest{FrameByNumber{static_cast<std::uint32_t>(*frame)}};
}

Reply HandleSelectTraceFrame(Session& session, std::string_view args) {
  auto request = ParseQTFrame(args);
  if (!request) return Reply::BadArguments("QTFrame: malformed arguments");
  TraceFrames* frames = session.target().trace_frames();
  std::optional<std::uint32_t>& selected = session.state().selected_frame;
  if (!request->query) {
    core::Status status = frames->SelectFrame(std::nullopt);
    if (!status.ok()) return Reply::FromStatus(status);
    selected.reset();
    return Reply::Packet("F-1");
  }
  auto hit = frames->FindFrame(*request->query, selected);
  if (!hit) return Reply::Packet("F-1");
  core::Status status = frames->SelectFrame(hit->frame);
  if (!status.ok()) return Reply::FromStatus(status);
  selected = hit->frame;
  std::string out = "F";
  AppendHexNumber(out, hit->frame);
  out += 'T';
  AppendHexNumber(out, hit->tracepoint);
  return Reply::Packet(std::move(out));
}

Reply HandleTraceStatus(Session& session, std::string_view) {
  TraceFrames* trace_frames = session.target().trace_frames();
  // A trace recorded by tracepoints answers what its own status line says
  // (`tstatus` then shows what it shows after `target tfile`).
  if (const core::TracepointDefinitions* defs = trace_frames->tracepoint_definitions();
      defs != nullptr && !defs->status.empty()) {
    return Reply::Packet("T" + defs->status);
  }
  std::uint64_t frames = trace_frames->frame_count();
  std::string out = "T0;tnotrun:0;tframes:";
  AppendHexNumber(out, frames);
  out += ";tcreated:";
  AppendHexNumber(out, frames);
  out += ";tfree:0;tsize:0;circular:0;disconn:0";
  return Reply::Packet(std::move(out));
}

namespace {

// One definition per packet: `first` restarts the list (qTfP, qTfV).
Reply NextDefinition(const std::vector<std::string>* lines, bool first, std::size_t& next) {
  if (first) next = 0;
  if (lines == nullptr || next >= lines->size()) return Reply::Packet("l");
  return Reply::Packet((*lines)[next++]);
}

}  // namespace

Reply HandleTracepointUpload(Session& session, bool first) {
  const core::TracepointDefinitions* defs =
      session.target().trace_frames()->tracepoint_definitions();
  return NextDefinition(defs ? &defs->tracepoints : nullptr, first,
                        session.state().tracepoint_upload_next);
}

Reply HandleVariableUpload(Session& session, bool first) {
  const core::TracepointDefinitions* defs =
      session.target().trace_frames()->tracepoint_definitions();
  return NextDefinition(defs ? &defs->variables : nullptr, first,
                        session.state().variable_upload_next);
}

Reply HandleTracepointStatus(Session& session, std::string_view args) {
  // "<number>:<address>", both hex as gdb prints them; the answer is the
  // tracepoint's `V<number>:<address>:<hits>:<usage>` upload line.
  const core::TracepointDefinitions* defs =
      session.target().trace_frames()->tracepoint_definitions();
  if (defs == nullptr) return Reply::Empty();
  const std::string prefix = "V" + std::string(args) + ":";
  for (const std::string& line : defs->tracepoints) {
    if (line.starts_with(prefix)) return Reply::Packet("V" + line.substr(prefix.size()));
  }
  return Reply::Empty();
}

Reply HandleTraceVariable(Session& session, std::string_view args) {
  auto number = ParseHexU64(args);
  if (!number || *number > kMaxNumber) return Reply::BadArguments("qTV: malformed variable number");
  auto value = session.target().trace_frames()->TraceVariable(static_cast<std::int32_t>(*number));
  if (!value) return Reply::Packet("U");
  std::string out = "V";
  AppendHexNumber(out, static_cast<std::uint64_t>(*value));
  return Reply::Packet(std::move(out));
}

}  // namespace backstep::gdbstub
