// The reverse-next plan of the selected frame from LLDB's line tables
// (SB API): the function's range, its line rows and the caller's row that
// holds the call. The stub runs it (gdbstub::ReverseNextPlan).
//
// Rows are LLDB's line-table rows inside the function, consecutive rows of
// one line merged when the line carries DWARF discriminators, as gdb's
// DWARF reader does (gdb 13 dwarf_record_line_p): LLDB's SB API has no
// discriminators, so they are read from the module's .debug_line here
// (dwarf_lines.h); without them rows stay as LLDB lists them.
//
// Thread-safety: LLDB's command thread.
#pragma once

#include <unordered_set>

#include "backstep/core/expected.h"
#include "backstep/gdbstub/trace_target.h"
#include "lldb/API/LLDB.h"

namespace backstep::lldb_plugin {

core::Expected<gdbstub::ReverseNextPlan> PlanReverseNext(lldb::SBTarget& target,
                                                         lldb::SBThread& thread);

}  // namespace backstep::lldb_plugin
