// Plain system calls: events whose only note is one system call that
// returns (no signal, exit, exec or mapping change: PlainSyscallNumber,
// backstep/core/event_notes.h). A recorded program
// makes most of its system calls this way, often one every hundred
// instructions. Since version 9 the index keeps them apart from the noted
// events (Trace::noted_events()), in a compact stream: per call its event,
// thread and number (~3 bytes), in blocks of kPlainSyscallsPerBlock calls
// with a skip record each (docs/formats/index-format.md, "Plain system
// calls"). The gdb stub's `catch syscall` searches the stream from the
// current position (a block at a time) instead of keeping every call.
//
// Thread-safety: a PlainSyscalls is an immutable view; concurrent reads are
// safe.
#pragma once

#include <cstdint>
#include <vector>

#include "backstep/core/types.h"

namespace backstep::core {

inline constexpr std::uint64_t kPlainSyscallsPerBlock = 256;

struct PlainSyscall {
  std::uint64_t event = 0;  // the event that makes it
  ThreadId thread;
  std::uint64_t number = 0;  // the system call's number
  auto operator<=>(const PlainSyscall&) const = default;
};

// A view of the index's stream (valid while its Trace lives).
class PlainSyscalls {
 public:
  PlainSyscalls() = default;
  // `skips`: block_count() skip records; `stream`: the calls' bytes. The
  // index checked both at open (TraceIndex::CheckPlainSyscalls).
  PlainSyscalls(std::uint64_t count, const std::uint8_t* skips, const std::uint8_t* stream,
                std::uint64_t stream_size)
      : count_(count), skips_(skips), stream_(stream), stream_size_(stream_size) {}

  std::uint64_t size() const { return count_; }
  std::uint64_t block_count() const {
    return count_ / kPlainSyscallsPerBlock + (count_ % kPlainSyscallsPerBlock != 0);
  }
  // The event of block b's first call. REQUIRES: b < block_count().
  std::uint64_t block_first_event(std::uint64_t b) const;
  // The last block whose first call is at or before `event` (0 when none;
  // REQUIRES: size() > 0). O(log blocks).
  std::uint64_t BlockAt(std::uint64_t event) const;
  // Block b's calls in event order into `out` (replaced). Never reads past
  // the stream.
  void Decode(std::uint64_t b, std::vector<PlainSyscall>* out) const;

 private:
  std::uint64_t count_ = 0;
  const std::uint8_t* skips_ = nullptr;
  const std::uint8_t* stream_ = nullptr;
  std::uint64_t stream_size_ = 0;
};

}  // namespace backstep::core
