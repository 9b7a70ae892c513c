// The `status` line (tracepoint.c parse_trace_status) and the readable
// summaries of definitions for `backstep info`.

#include "formats/tfile/tfile_definitions.h"
#include "formats/tfile/tfile_text.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

using tfile_text::DecodeHexText;
using tfile_text::ParseHexU64;
using tfile_text::SplitFirst;

bool IsStopReason(std::string_view key) {
  return key == "tunknown" || key == "tnotrun" || key == "tstop" || key == "tfull" ||
         key == "tdisconnected" || key == "tpasscount" || key == "terror";
}

// tstop:<hexnotes>:<tp>, older tstop:<tp>; terror:<hexmsg>:<tp>.
bool ParseStopValue(std::string_view key, std::string_view value, TfileStatus* s) {
  s->stop_reason = std::string(key);
  if (key == "tpasscount") {
    s->stopping_tracepoint = ParseHexU64(value);
    return s->stopping_tracepoint.has_value();
  }
  if (key != "tstop" && key != "terror") return true;  // a value gdb ignores
  auto [first, second] = SplitFirst(value, ':');
  if (value.find(':') == std::string_view::npos) {
    s->stopping_tracepoint = ParseHexU64(first);
    return s->stopping_tracepoint.has_value();
  }
  auto text = DecodeHexText(first);
  s->stopping_tracepoint = ParseHexU64(second);
  if (!text || !s->stopping_tracepoint) return false;
  s->stop_notes = *text;
  return true;
}

bool ParseItem(std::string_view key, std::string_view value, TfileStatus* s) {
  if (IsStopReason(key)) return ParseStopValue(key, value, s);
  struct Field {
    std::string_view key;
    std::optional<std::uint64_t> TfileStatus::*field;
  };
  static constexpr Field kNumbers[] = {
      {"tframes", &TfileStatus::frames},       {"tcreated", &TfileStatus::created},
      {"tfree", &TfileStatus::free},           {"tsize", &TfileStatus::size},
      {"circular", &TfileStatus::circular},    {"disconn", &TfileStatus::disconnected},
      {"starttime", &TfileStatus::start_time}, {"stoptime", &TfileStatus::stop_time},
  };
  for (const Field& f : kNumbers) {
    if (key != f.key) continue;
    s->*f.field = ParseHexU64(value);
    return (s->*f.field).has_value();
  }
  if (key == "notes" || key == "username") {
    auto text = DecodeHexText(value);
    if (!text) return false;
    (key == "notes" ? s->notes : s->user) = *text;
  }
  return true;  // gdb silently skips unknown optional items
}

void AppendQuoted(std::string* out, std::string_view label, std::string_view text) {
  if (text.empty()) return;
  *out += ", " + std::string(label) + " \"" + tfile_text::Printable(text, 200) + "\"";
}

}  // namespace

TfileStatus ParseTfileStatus(std::string_view text, std::string* warning) {
  TfileStatus s;
  s.line = std::string(text);
  auto [run, items] = SplitFirst(text, ';');
  const auto run_v = ParseHexU64(run);
  if (!run_v) *warning = "status: malformed running flag";
  s.running = run_v == 1u;
  std::vector<std::string> bad;
  while (!items.empty()) {
    auto [item, more] = SplitFirst(items, ';');
    items = more;
    if (item.empty()) continue;
    auto [key, value] = SplitFirst(item, ':');
    if (item.find(':') == std::string_view::npos || !ParseItem(key, value, &s)) {
      bad.push_back(tfile_text::Printable(item));
    }
  }
  for (const std::string& b : bad) {
    *warning += std::string(warning->empty() ? "status: " : ", ") + "malformed item '" + b + "'";
  }
  return s;
}

std::string DescribeTfileStatus(const TfileStatus& s) {
  std::string out = s.running ? "running" : "not running";
  if (!s.stop_reason.empty()) {
    out += ", stop reason " + s.stop_reason;
    if (s.stopping_tracepoint && *s.stopping_tracepoint != 0) {
      out += " (tracepoint " + std::to_string(*s.stopping_tracepoint) + ")";
    }
  }
  AppendQuoted(&out, "stop notes", s.stop_notes);
  if (s.frames) out += ", " + std::to_string(*s.frames) + " frames";
  if (s.created) out += " (" + std::to_string(*s.created) + " created)";
  if (s.size) out += ", buffer " + HexU64(*s.size) + " bytes";
  if (s.free) out += ", " + HexU64(*s.free) + " free";
  if (s.circular && *s.circular) out += ", circular";
  if (s.disconnected && *s.disconnected) out += ", disconnected tracing";
  if (s.start_time) out += ", start time " + HexU64(*s.start_time);
  if (s.stop_time) out += ", stop time " + HexU64(*s.stop_time);
  AppendQuoted(&out, "notes", s.notes);
  AppendQuoted(&out, "user", s.user);
  return out;
}

std::string DescribeTfileTsv(const TfileTsv& tsv) {
  std::string out =
      "$" + tfile_text::Printable(tsv.name, 100) + " initial " + std::to_string(tsv.initial);
  if (tsv.builtin) out += ", builtin";
  return out;
}

std::string DescribeTfileTracepoint(const TfileTracepoint& tp, int gdb_number) {
  std::string out = HexU64(tp.address);
  if (tp.defined) {
    out += std::string(tp.enabled ? " enabled" : " disabled") + ", step " +
           std::to_string(tp.step_count) + ", pass " + std::to_string(tp.pass_count);
  } else {
    out += " (no definition line)";
  }
  if (tp.hits) out += ", hits " + std::to_string(*tp.hits);
  out += ", gdb number " + std::to_string(gdb_number);
  if (tp.fast_size) out += ", fast";
  if (tp.is_static) out += ", static";
  AppendQuoted(&out, "at", tp.at_string);
  AppendQuoted(&out, "condition", tp.cond_string);
  // The user's commands when gdb saved them (Z cmd), else the raw actions.
  std::string collects;
  for (const std::string& c : tp.cmd_strings) {
    collects += (collects.empty() ? "" : "; ") + tfile_text::Printable(c, 200);
  }
  if (tp.cmd_strings.empty()) {
    for (const std::string& a : tp.actions) {
      collects += (collects.empty() ? "" : "; ") + tfile_text::Printable(a, 200);
    }
    for (const std::string& a : tp.step_actions) {
      collects += (collects.empty() ? "while-stepping: " : "; while-stepping: ") +
                  tfile_text::Printable(a, 200);
    }
  }
  if (!collects.empty()) out += ", collects: " + collects;
  return out;
}

}  // namespace backstep::core
