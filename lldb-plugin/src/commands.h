// The `backstep` commands' handlers (plugin.cc registers them with their
// names, help and syntax). Each takes the command's words after its name and
// sets `result` (command_support.h).
//
//   open            open_command.cc
//   reverse-*, goto move_commands.cc: arm a move in the stub, then trigger it
//   when, info, history, last-write
//                   query_commands.cc: the stub's monitor commands
//
// Thread-safety: LLDB's command thread only.
#pragma once

#include <cstddef>
#include <string>

#include "command_support.h"
#include "lldb/API/LLDB.h"

namespace backstep::lldb_plugin {

bool Open(lldb::SBDebugger debugger, const Args& args, lldb::SBCommandReturnObject& result);
bool ReverseStepi(lldb::SBDebugger debugger, const Args& args, lldb::SBCommandReturnObject& result);
bool ReverseContinue(lldb::SBDebugger debugger, const Args& args,
                     lldb::SBCommandReturnObject& result);
bool ReverseFinish(lldb::SBDebugger debugger, const Args& args,
                   lldb::SBCommandReturnObject& result);
bool ReverseNext(lldb::SBDebugger debugger, const Args& args, lldb::SBCommandReturnObject& result);
bool Goto(lldb::SBDebugger debugger, const Args& args, lldb::SBCommandReturnObject& result);
// Monitor command `name` with min..max positional words (`usage` on a
// mismatch); with `address`, the first word is an address (number or
// expression) and the second a nonzero length. `--max N` passes through when
// `usage` mentions it.
bool Query(lldb::SBDebugger debugger, const std::string& name, const Args& args, std::size_t min,
           std::size_t max, const char* usage, bool address, lldb::SBCommandReturnObject& result);

}  // namespace backstep::lldb_plugin
