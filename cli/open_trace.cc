#include "cli/open_trace.h"

namespace backstep::cli {

core::Expected<std::shared_ptr<core::Trace>> OpenTraceForCli(const std::string& path, Args& args,
                                                             core::OpenOptions options) {
  if (auto dir = args.TakeOption("cache-dir")) options.cache_dir = *dir;
  if (args.TakeFlag("single-pass")) options.index_parts = 1;
  options.progress = TerminalProgress();
  auto trace = core::Trace::Open(path, options);
  FinishProgress();
  return trace;
}

std::optional<core::Position> ParsePosition(std::string_view text, const core::Trace& trace) {
  std::uint64_t end = trace.event_count();
  if (text == "end") return core::Position(end);
  if (!text.empty() && text.back() == '%') {
    auto pct = ParseNumber(text.substr(0, text.size() - 1));
    if (!pct || *pct > 100) return std::nullopt;
    return core::Position(static_cast<std::uint64_t>((static_cast<long double>(end) * *pct) / 100));
  }
  auto n = ParseNumber(text);
  if (!n) return std::nullopt;
  return core::Position(*n);
}

std::string IndexStatusText(const core::IndexStatus& status) {
  if (status.reused) return "up to date (reused)";
  std::string text = "built now (" + status.rebuilt_why;
  if (status.build_parts > 1) {
    text += "; " + std::to_string(status.build_parts) +
            " parts in parallel from the trace's resume points";
  } else {
    text += "; single pass";
    if (!status.build_note.empty()) text += ": " + status.build_note;
  }
  return text + ")";
}

}  // namespace backstep::cli
