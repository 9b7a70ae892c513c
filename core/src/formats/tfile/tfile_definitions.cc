#include "formats/tfile/tfile_definitions.h"

#include "formats/tfile/tfile_format.h"
#include "formats/tfile/tfile_text.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

using tfile_text::DecodeHexText;
using tfile_text::ParseHexU64;
using tfile_text::SplitFirst;

// gdb's get_uploaded_tp: the entry for (number, address), created if new.
TfileTracepoint& UploadedTracepoint(TfileDefinitions* defs, std::uint32_t number, Address addr) {
  auto [it, inserted] =
      defs->tracepoint_index.try_emplace({number, addr}, defs->tracepoints.size());
  if (!inserted) return defs->tracepoints[it->second];
  TfileTracepoint& tp = defs->tracepoints.emplace_back();
  tp.number = number;
  tp.address = addr;
  return tp;
}

// "E:<step>:<pass>[:F<len>][:S][:X<len>,<hex>]" after "T<n>:<addr>:".
bool ParseTracepointT(std::string_view rest, TfileTracepoint* tp, std::string* warning) {
  auto [enabled, r1] = SplitFirst(rest, ':');
  auto [step, r2] = SplitFirst(r1, ':');
  auto [pass, optional] = SplitFirst(r2, ':');
  auto step_v = ParseHexU64(step);
  auto pass_v = ParseHexU64(pass);
  if ((enabled != "E" && enabled != "D") || !step_v || !pass_v) return false;
  tp->enabled = enabled == "E";
  tp->step_count = *step_v;
  tp->pass_count = *pass_v;
  tp->defined = true;
  // Optional fields; gdb warns about an unknown one and skips the rest.
  while (!optional.empty()) {
    auto [field, more] = SplitFirst(optional, ':');
    if (field.starts_with('F') && ParseHexU64(field.substr(1))) {
      tp->fast_size = ParseHexU64(field.substr(1));
    } else if (field == "S") {
      tp->is_static = true;
    } else if (field.starts_with('X')) {
      auto [len, hex] = SplitFirst(field.substr(1), ',');
      auto n = ParseHexU64(len);
      if (!n || hex.size() != 2 * *n) {
        *warning = "malformed condition '" + std::string(field) + "'";
        return true;
      }
      tp->condition = std::string(hex);
    } else {
      *warning = "unrecognized field '" + std::string(field) + "' in tracepoint definition";
      return true;
    }
    optional = more;
  }
  return true;
}

// "<kind>:<start>:<len>:<hex>" after "Z<n>:<addr>:".
bool ParseTracepointZ(std::string_view rest, TfileTracepoint* tp, std::string* warning) {
  auto [kind, r1] = SplitFirst(rest, ':');
  auto [start, r2] = SplitFirst(r1, ':');
  auto [len, hex] = SplitFirst(r2, ':');
  auto text = DecodeHexText(hex);
  if (!ParseHexU64(start) || !ParseHexU64(len) || !text) return false;
  if (kind == "at") {
    tp->at_string = *text;
  } else if (kind == "cond") {
    tp->cond_string = *text;
  } else if (kind == "cmd") {
    tp->cmd_strings.push_back(*text);
  } else {
    *warning = "unknown source kind '" + std::string(kind) + "'";
  }
  return true;
}

// `tp <piece><n>:<addr>:...` (tracepoint.c parse_tracepoint_definition).
void ParseTp(std::string_view body, TfileDefinitions* defs, std::string* warning) {
  if (body.empty()) {
    *warning = "empty tracepoint definition";
    return;
  }
  const char piece = body.front();
  if (piece != 'T' && piece != 'A' && piece != 'S' && piece != 'Z' && piece != 'V') {
    *warning = std::string("unrecognized tracepoint piece '") + piece + "'";
    return;
  }
  auto [num, r1] = SplitFirst(body.substr(1), ':');
  auto [addr, rest] = SplitFirst(r1, ':');
  auto num_v = ParseHexU64(num);
  auto addr_v = ParseHexU64(addr);
  if (!num_v || *num_v > 0xffffffffu || !addr_v) {
    *warning = "malformed tracepoint number or address";
    return;
  }
  TfileTracepoint& tp = UploadedTracepoint(defs, static_cast<std::uint32_t>(*num_v), *addr_v);
  TfileTracepoint scratch = tp;  // a copy: a malformed piece changes nothing
  bool ok = true;
  switch (piece) {
    case 'T':
      ok = ParseTracepointT(rest, &scratch, warning);
      break;
    case 'A':
      scratch.actions.emplace_back(rest);
      break;
    case 'S':
      scratch.step_actions.emplace_back(rest);
      break;
    case 'Z':
      ok = ParseTracepointZ(rest, &scratch, warning);
      break;
    case 'V': {
      auto [hits, usage] = SplitFirst(rest, ':');
      ok = ParseHexU64(hits) && ParseHexU64(usage);
      scratch.hits = ParseHexU64(hits);
      scratch.traceframe_usage = ParseHexU64(usage);
      break;
    }
  }
  if (!ok) {
    *warning = std::string("malformed '") + piece + "' piece";
    return;
  }
  tp = std::move(scratch);
}

// `tsv <n>:<initial>:<builtin>:<hexname>` (tracepoint.c parse_tsv_definition).
void ParseTsv(std::string_view body, TfileDefinitions* defs, std::string* warning) {
  auto [num, r1] = SplitFirst(body, ':');
  auto [initial, r2] = SplitFirst(r1, ':');
  auto [builtin, hexname] = SplitFirst(r2, ':');
  auto num_v = ParseHexU64(num);
  auto init_v = ParseHexU64(initial);
  auto builtin_v = ParseHexU64(builtin);
  auto name = DecodeHexText(hexname);
  if (!num_v || *num_v > 0xffffffffu || !init_v || !builtin_v || !name) {
    *warning = "malformed trace state variable";
    return;
  }
  TfileTsv tsv;
  tsv.number = static_cast<std::uint32_t>(*num_v);
  tsv.initial = static_cast<std::int64_t>(*init_v);
  tsv.builtin = *builtin_v != 0;
  tsv.name = *name;
  defs->tsvs.push_back(std::move(tsv));
}

}  // namespace

std::string TfileDefinitions::TdescXml() const {
  std::string xml;
  for (std::size_t i = 0; i < tdesc_lines.size(); ++i) {
    if (i) xml += '\n';
    xml += tdesc_lines[i];
  }
  return xml;
}

std::vector<std::size_t> TfileDefinitions::FindTracepoints(std::uint32_t number) const {
  std::vector<std::size_t> out;
  for (auto it = tracepoint_index.lower_bound({number, 0});
       it != tracepoint_index.end() && it->first.first == number; ++it) {
    out.push_back(it->second);
  }
  return out;
}

Status ParseTfileDefinitionLine(std::string_view line, TfileDefinitions* defs,
                                std::string* warning_out) {
  std::string& warning = *warning_out;
  warning.clear();
  // gdb keeps each line in a C string: nothing after a NUL reaches its
  // parsers (the exporter hides a decoy frame header there, tfile_writer.h).
  line = line.substr(0, line.find('\0'));
  if (line.starts_with("R ")) {
    const auto size = ParseHexU64(line.substr(2));
    if (!size) {
      return Status::Corruption("register block size '" + tfile_text::Printable(line.substr(2)) +
                                "' is not hex");
    }
    if (*size == 0 || *size > kTfileMaxRegisterBlock) {
      return Status::Corruption("register block size " + HexU64(*size) + " is out of range (1.." +
                                HexU64(kTfileMaxRegisterBlock) + ")");
    }
    if (defs->register_block_size && *defs->register_block_size != *size) {
      warning = "register block size redefined from " + HexU64(*defs->register_block_size);
    }
    defs->register_block_size = size;
  } else if (line.starts_with("tdesc ")) {
    defs->tdesc_lines.emplace_back(line.substr(6));
  } else if (line.starts_with("status ")) {
    defs->status = ParseTfileStatus(line.substr(7), &warning);
  } else if (line.starts_with("tsv ")) {
    ParseTsv(line.substr(4), defs, &warning);
  } else if (line.starts_with("tp ")) {
    ParseTp(line.substr(3), defs, &warning);
  } else {
    warning = "unknown definition '" + tfile_text::Printable(line) + "' ignored";
  }
  return Status::Ok();
}

std::vector<std::string> FormatTfileTracepointLines(const TfileTracepoint& tp) {
  using tfile_text::EncodeHexText;
  using tfile_text::Hex;
  const std::string id = Hex(tp.number) + ":" + Hex(tp.address) + ":";
  std::vector<std::string> lines;
  std::string t =
      "tp T" + id + (tp.enabled ? "E" : "D") + ":" + Hex(tp.step_count) + ":" + Hex(tp.pass_count);
  if (tp.fast_size) t += ":F" + Hex(*tp.fast_size);
  if (tp.is_static) t += ":S";
  if (!tp.condition.empty()) t += ":X" + Hex(tp.condition.size() / 2) + "," + tp.condition;
  lines.push_back(std::move(t));
  for (const std::string& a : tp.actions) lines.push_back("tp A" + id + a);
  for (const std::string& a : tp.step_actions) lines.push_back("tp S" + id + a);
  auto source = [&](std::string_view kind, const std::string& text) {
    lines.push_back("tp Z" + id + std::string(kind) + ":0:" + Hex(text.size()) + ":" +
                    EncodeHexText(text));
  };
  if (!tp.at_string.empty()) source("at", tp.at_string);
  if (!tp.cond_string.empty()) source("cond", tp.cond_string);
  for (const std::string& c : tp.cmd_strings) source("cmd", c);
  if (tp.hits)
    lines.push_back("tp V" + id + Hex(*tp.hits) + ":" + Hex(tp.traceframe_usage.value_or(0)));
  return lines;
}

std::string FormatTfileTsvLine(const TfileTsv& tsv) {
  using tfile_text::Hex;
  return "tsv " + Hex(tsv.number) + ":" + Hex(static_cast<std::uint64_t>(tsv.initial)) + ":" +
         (tsv.builtin ? "1" : "0") + ":" + tfile_text::EncodeHexText(tsv.name);
}

}  // namespace backstep::core
