// How the emulation engine runs each instruction (emu_recorder.h: where TCG
// and the CPU disagree, the CPU runs it), decided once per pc from its
// bytes: capstone's decoding and the recorder's (insn_decoder.h).
//
// Thread-safety: pure functions (the capstone handle is the caller's).
#pragma once

#include <capstone/capstone.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backstep/core/event.h"
#include "recorder/address_space.h"
#include "recorder/insn_decoder.h"

namespace backstep::record {

struct PcInfo {
  bool fp = false, rdtsc = false, rdtscp = false, rep = false;
  bool native = false;      // run by the CPU: undefined flags, rep string instructions
  bool simd_flags = false;  // ... and SSE arithmetic (MXCSR flags)
  bool memory = false;      // has a memory operand (the tracee needs the emulator's memory)
  bool in_process = false;  // register-only: run by NativeInsn in the recorder
  bool writable = false;    // ... from writable memory: check the bytes each time
  std::vector<std::uint8_t> bytes;
};

// The instruction at `pc` (`bytes`, decoded by the recorder as `d`);
// `capstone`: an x86-64 handle with CS_OPT_DETAIL on; `space` says whether
// its code is writable.
PcInfo ClassifyInsn(csh capstone, core::Address pc, std::span<const std::uint8_t> bytes,
                    const Decoded& d, const AddressSpace& space);

}  // namespace backstep::record
