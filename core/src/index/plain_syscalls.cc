// The index's stream of plain system calls (PlainSyscalls,
// backstep/core/plain_syscalls.h) and its encoder (PlainSyscallWriter, plain_syscall_writer.h).
#include "backstep/core/plain_syscalls.h"

#include <algorithm>

#include "index/index_format.h"
#include "index/plain_syscall_writer.h"

namespace backstep::core {

std::uint64_t PlainSyscalls::block_first_event(std::uint64_t b) const {
  return LoadRecord<SyscallSkipRecord>(skips_ + b * sizeof(SyscallSkipRecord)).first_event;
}

std::uint64_t PlainSyscalls::BlockAt(std::uint64_t event) const {
  std::uint64_t lo = 0, hi = block_count();  // the answer is in [lo, hi)
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (block_first_event(mid) <= event) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

void PlainSyscalls::Decode(std::uint64_t b, std::vector<PlainSyscall>* out) const {
  out->clear();
  const auto skip = LoadRecord<SyscallSkipRecord>(skips_ + b * sizeof(SyscallSkipRecord));
  const std::uint64_t n =
      b + 1 < block_count() ? kPlainSyscallsPerBlock : count_ - b * kPlainSyscallsPerBlock;
  const std::uint8_t* in = stream_ + std::min(skip.offset, stream_size_);
  const std::uint8_t* end = stream_ + stream_size_;
  std::uint64_t event = skip.first_event, tid = skip.tid;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t head = GetVarint(in, end);
    event += head >> 1;
    const std::uint64_t number = GetVarint(in, end);
    if (head & 1) tid = GetVarint(in, end);
    out->push_back({event, ThreadId(tid), number});
  }
}

void PlainSyscallWriter::Add(const PlainSyscall& call) {
  std::uint8_t bytes[30];
  std::uint8_t* out = bytes;
  if (count_ % kPlainSyscallsPerBlock == 0) {
    skips_.push_back({call.event, call.thread.value, stream_.size()});
    last_event_ = call.event;
    last_tid_ = call.thread.value;
  }
  const bool new_thread = call.thread.value != last_tid_;
  PutVarint((call.event - last_event_) << 1 | (new_thread ? 1 : 0), out);
  PutVarint(call.number, out);
  if (new_thread) PutVarint(call.thread.value, out);
  stream_.insert(stream_.end(), bytes, out);
  last_event_ = call.event;
  last_tid_ = call.thread.value;
  ++count_;
}

void PlainSyscallWriter::Append(const PlainSyscallWriter& other) {
  const PlainSyscalls view = other.View();
  std::vector<PlainSyscall> block;
  for (std::uint64_t b = 0; b < view.block_count(); ++b) {
    view.Decode(b, &block);
    for (const PlainSyscall& call : block) Add(call);
  }
}

}  // namespace backstep::core
