// The machine code that the native engine's system call buffer
// (syscall_buffer.h) copies into the recorded program, and the layout it
// shares with the recorder. Position-independent: it is copied to the first
// page of the "core" region; it reaches its data through fixed offsets
// from its own address.
//
// Core region (from its base C):
//   C + 0x0000  code, read and execute (this blob):
//     +0   a `syscall; ret` that the seccomp filter lets through
//          (seccomp_data.instruction_pointer == C + kAllowedIp);
//     +16  a `syscall; ret` the handler makes when the buffer is full
//          (getpid; the recorder drains the buffer and skips the call);
//     +32  the common handler, entered from a site's trampoline slot.
//   C + 0x1000  control data (offsets kData*), its private stack below
//               C + 0x2000;
//   C + 0x2000  the buffer: records of kRecordHeader bytes plus the bytes
//               the kernel wrote, each a multiple of 8 bytes;
//   C + 0x102000 trampoline slots for sites within 2 GiB (the libraries).
//
// A record: u64 size, u64 slot address, the 15 general registers in
// user_regs_struct's order (r15 ... rdi; rax is the call's number), the
// flags, rsp, the result, the output's address and length, then the
// output's bytes.
//
// The handler buffers read and pread64 (output: the bytes read), write,
// pwrite64 and lseek of a descriptor whose bit is set in kDataSafeFds (the
// recorder sets it for regular files, /dev/null and /dev/zero), the getpid
// family, and clock_gettime of the usual clocks when kDataClocks is set. Anything else, or
// kDataTraceNext set, goes to the slot's traced `syscall`, which stops in
// the recorder like the original one.
//
// Thread-safety: the blob is constant data.
#pragma once

#include <cstdint>
#include <span>

namespace backstep::record::stub {

inline constexpr std::uint64_t kAllowedIp = 2;        // after the allowed `syscall`
inline constexpr std::uint64_t kFlushIp = 18;         // after the flush `syscall`
inline constexpr std::uint64_t kCommonEntry = 32;     // the handler
inline constexpr std::uint64_t kDataPage = 0x1000;    // control data
inline constexpr std::uint64_t kStackTop = 0x2000;    // the private stack's top
inline constexpr std::uint64_t kBuffer = 0x2000;      // the records
inline constexpr std::uint64_t kCapacity = 0x100000;  // the buffer's size
inline constexpr std::uint64_t kCoreSlots = kBuffer + kCapacity;
inline constexpr std::uint64_t kSlotArea = 0x10000;  // slots per region: kSlotArea / kSlotSize
inline constexpr std::uint64_t kCoreSize = kCoreSlots + kSlotArea;

// Control data, at C + kDataPage + offset.
inline constexpr std::uint64_t kDataSavedRsp = 0, kDataSavedRax = 8, kDataJumpTo = 16,
                               kDataSlot = 24, kDataTraceNext = 32, kDataClocks = 40,
                               kDataUsed = 48, kDataCount = 56, kDataCapacity = 64,
                               kDataMaxOutput = 72,  // the largest read buffered
    kDataSafeFds = 128;                              // 1024 bits
inline constexpr std::uint64_t kSafeFdCount = 1024;

// A trampoline slot (syscall_buffer.cc): kSlotSize bytes. At kSlotTraced
// the traced `syscall` (the handler jumps there for a call it passes on),
// at kSlotContinue the continuation (rcx as the site's `syscall` leaves it,
// the instructions the patch covered after it, relocated, the jump back);
// at kSlotEntry what the patched site jumps to (the instructions the patch
// covered before the `syscall`, then the switch to the handler).
inline constexpr std::uint64_t kSlotSize = 128, kSlotTraced = 0, kSlotContinue = 2, kSlotEntry = 48;

inline constexpr std::uint64_t kRecordHeader = 176;

// The address of control data `offset` in the core region at `core`.
inline std::uint64_t DataAddress(std::uint64_t core, std::uint64_t offset) {
  return core + kDataPage + offset;
}

// The handler's machine code.
std::span<const std::uint8_t> HandlerCode();

}  // namespace backstep::record::stub
