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
  std::uint64_t frames = session.target().trace_frames()->frame_count();
  std::string out = "T0;tnotrun:0;tframes:";
  AppendHexNumber(out, frames);
  out += ";tcreated:";
  AppendHexNumber(out, frames);
  out += ";tfree:0;tsize:0;circular:0;disconn:0";
  return Reply::Packet(std::move(out));
}

Reply HandleTraceListEnd(Session&, std::string_view) { return Reply::Packet("l"); }

}  // namespace backstep::gdbstub
