// Register reads: `g` (all registers, gdb) and `p<n>` (one register, LLDB),
// both with LLDB's optional `;thread:<id>;` suffix (docs/protocol.md §4, §10, §11).
//
// Values are hex in target byte order, `xx` for each unknown byte (gdb shows
// the register as <unavailable>). The `g` block is registers 0..count-1 of
// Target::register_layout() back to back, which matches the target.xml the
// target serves. Register writes (G, P) are refused in read_only.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "packets/thread_id.h"
#include "session/reply.h"

namespace backstep::gdbstub {

class Session;
struct RegisterValue;

struct ReadRegistersRequest {  // g
  std::optional<ThreadSpec> thread;
};
struct ReadRegisterRequest {  // p<n>
  int regnum = 0;
  std::optional<ThreadSpec> thread;
};

std::optional<ReadRegistersRequest> ParseReadRegisters(std::string_view args);
std::optional<ReadRegisterRequest> ParseReadRegister(std::string_view args);

// Appends a value as hex, `xx` for unknown bytes.
void AppendRegisterHex(std::string& out, const RegisterValue& value);

Reply HandleReadRegisters(Session& session, std::string_view args);
Reply HandleReadRegister(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
