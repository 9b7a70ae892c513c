#include "line_rows.h"

#include <algorithm>
#include <vector>

#include "dwarf_lines.h"

namespace backstep::lldb_plugin {
namespace {

bool Valid(lldb::addr_t a) { return a != LLDB_INVALID_ADDRESS; }

struct FunctionLines {
  lldb::addr_t start = LLDB_INVALID_ADDRESS, end = LLDB_INVALID_ADDRESS;
  std::vector<gdbstub::LineRow> rows;  // load addresses, sorted, folded as gdb folds them
};

std::unordered_set<std::uint64_t> FoldedRowsOf(lldb::SBModule module) {
  lldb::SBSection section = module.FindSection(".debug_line");
  if (!section.IsValid()) return {};
  lldb::SBData data = section.GetSectionData();
  std::vector<std::uint8_t> bytes(data.GetByteSize());
  lldb::SBError error;
  if (bytes.empty() || data.ReadRawData(error, 0, bytes.data(), bytes.size()) != bytes.size()) {
    return {};
  }
  return FoldedLineRows(bytes);
}

// The function around `frame`'s pc (for a caller frame: around the call).
core::Expected<FunctionLines> LinesOf(lldb::SBTarget& target, lldb::SBFrame& frame,
                                      lldb::addr_t pc) {
  FunctionLines out;
  lldb::SBFunction function = frame.GetFunction();
  lldb::SBSymbol symbol = frame.GetSymbol();
  if (function.IsValid()) {
    out.start = function.GetStartAddress().GetLoadAddress(target);
    out.end = function.GetEndAddress().GetLoadAddress(target);
  } else if (symbol.IsValid()) {
    out.start = symbol.GetStartAddress().GetLoadAddress(target);
    out.end = symbol.GetEndAddress().GetLoadAddress(target);
  }
  if (!Valid(out.start) || !Valid(out.end) || out.start >= out.end || pc < out.start ||
      pc >= out.end) {
    return core::Status::NotFound("no function around pc " + std::to_string(pc));
  }
  lldb::SBAddress pc_address = frame.GetPCAddress();
  const lldb::addr_t slide = pc_address.GetLoadAddress(target) - pc_address.GetFileAddress();
  lldb::SBCompileUnit unit = frame.GetCompileUnit();
  if (!unit.IsValid()) return out;
  const std::unordered_set<std::uint64_t> folded = FoldedRowsOf(frame.GetModule());
  const std::uint32_t count = unit.GetNumLineEntries();
  for (std::uint32_t i = 0; i < count; ++i) {
    lldb::SBLineEntry entry = unit.GetLineEntryAtIndex(i);
    const lldb::addr_t start = entry.GetStartAddress().GetLoadAddress(target);
    if (!Valid(start) || start < out.start || start >= out.end || entry.GetLine() == 0) continue;
    if (folded.contains(start - slide)) continue;
    out.rows.push_back(gdbstub::LineRow{start, entry.GetLine()});
  }
  std::stable_sort(
      out.rows.begin(), out.rows.end(),
      [](const gdbstub::LineRow& a, const gdbstub::LineRow& b) { return a.start < b.start; });
  // One row per address: the last one listed wins, as in a line program.
  std::vector<gdbstub::LineRow> unique;
  for (const gdbstub::LineRow& row : out.rows) {
    if (!unique.empty() && unique.back().start == row.start) {
      unique.back() = row;
    } else {
      unique.push_back(row);
    }
  }
  out.rows = std::move(unique);
  return out;
}

}  // namespace

core::Expected<gdbstub::ReverseNextPlan> PlanReverseNext(lldb::SBTarget& target,
                                                         lldb::SBThread& thread) {
  lldb::SBFrame frame = thread.GetFrameAtIndex(0);
  if (!frame.IsValid()) return core::Status::NotFound("no frame");
  auto lines = LinesOf(target, frame, frame.GetPC());
  if (!lines.ok()) {
    return core::Status::NotFound(lines.status().message() + " (use backstep reverse-stepi)");
  }
  gdbstub::ReverseNextPlan plan;
  plan.function_start = lines->start;
  plan.function_end = lines->end;
  plan.rows = std::move(lines->rows);

  lldb::SBFrame caller = thread.GetFrameAtIndex(1);
  if (caller.IsValid() && caller.GetPC() > 0) {
    const lldb::addr_t call = caller.GetPC() - 1;  // inside the call instruction
    auto caller_lines = LinesOf(target, caller, call);
    if (caller_lines.ok()) {
      const auto& rows = caller_lines->rows;
      auto it =
          std::upper_bound(rows.begin(), rows.end(), call,
                           [](lldb::addr_t a, const gdbstub::LineRow& r) { return a < r.start; });
      if (it != rows.begin()) {
        plan.caller_row_start = std::prev(it)->start;
        plan.caller_line = std::prev(it)->line;
        plan.caller_row_end = it == rows.end() ? caller_lines->end : it->start;
      }
    }
  }
  return plan;
}

}  // namespace backstep::lldb_plugin
