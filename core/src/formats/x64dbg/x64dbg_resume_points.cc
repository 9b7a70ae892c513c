// X64dbgReader::ResumePoints(): the full dumps, each with the registers
// every thread has there in the sequential replay of the reader's events
// (x64dbg_reader.h), found by one walk over the blocks that keeps the
// REGDUMP but decodes no event: the parallel index build waits for it.
//
// The thread of the full dump has the REGDUMP there. A suspended thread has
// the REGDUMP at its next block when the reader's look-ahead reaches it
// (else nothing), which the walk learns only when it gets there: such
// points wait for that block.
#include <algorithm>
#include <map>

#include "formats/x64dbg/x64dbg_format.h"
#include "formats/x64dbg/x64dbg_reader.h"

namespace backstep::core {
namespace {

constexpr std::size_t kMaxResumePoints = 256;
// Each point holds every thread's registers: beyond this many threads the
// points would cost too much memory; the index then builds in one pass.
constexpr std::size_t kMaxResumeThreads = 64;

struct ThreadWalk {
  bool ran = false;                    // one of its blocks was walked
  std::uint64_t last = 0;              // its last block, when another thread's followed it
  std::vector<std::uint64_t> waiting;  // ordinals of points waiting for its next block
};

}  // namespace

std::vector<ResumePoint> X64dbgReader::ResumePoints() const {
  if (first_block_ >= data_.size()) return {};
  const unsigned duint = layout_->duint(), slots = layout_->slot_count();
  X64dbgBlock first;
  if (!ParseX64dbgNextBlock(data_, first_block_, duint, slots, nullptr, source_->name(), &first)
           .ok()) {
    return {};  // the build meets the error itself
  }
  std::vector<std::uint8_t> dump(layout_->dump_size()), known(slots);
  ApplyX64dbgSlots(first, duint, dump, known);
  X64dbgWalk walk(data_, duint, slots, source_->name());
  walk.Start(first, first.has_thread ? first.thread : 1, dump, known);

  std::map<std::uint64_t, ThreadWalk> threads;
  for (const auto& [tid, regs] : initial_) threads[tid.value];
  std::vector<ResumePoint> points;
  std::vector<std::uint64_t> ordinals;  // of `points`, ascending
  std::uint64_t stride = 1, ordinal = 0;
  std::vector<RegisterWrite> writes;
  auto registers = [&] {
    writes.clear();
    layout_->DecodeAll(walk.dump(), walk.known(), &writes);
    RegisterFile regs(layout_->arch());
    for (const RegisterWrite& w : writes) regs.Apply(w);
    return regs;
  };
  std::uint64_t prev_thread = 0;
  for (std::uint64_t p = 0;; ++p) {
    if (p > 0 && !walk.Next()) break;  // at the end, or the build meets the error
    const std::uint64_t tid = walk.thread();
    const bool switched_in = p > 0 && tid != prev_thread;
    if (switched_in) {
      threads[prev_thread].last = p - 1;
    }
    const bool known_before = threads.count(tid) != 0;
    ThreadWalk& me = threads[tid];
    if (threads.size() > kMaxResumeThreads) return {};
    // Its registers here: the REGDUMP when its previous event or the
    // initial scan reached this block, else none.
    const bool reached = !switched_in || (me.ran ? p - me.last - 1 <= kX64dbgLookahead
                                                 : known_before && p <= kX64dbgLookahead);
    RegisterFile here(layout_->arch());
    if (reached) here = registers();
    for (std::uint64_t o : me.waiting) {
      auto it = std::lower_bound(ordinals.begin(), ordinals.end(), o);
      if (it == ordinals.end() || *it != o) continue;  // dropped
      for (auto& [t, regs] : points[it - ordinals.begin()].registers) {
        if (t.value == tid) regs = here;
      }
    }
    me.waiting.clear();
    const X64dbgBlock& b = walk.block();
    if (p > 0 && known_before && b.full_dump && b.thread_flag && ordinal++ % stride == 0) {
      ResumePoint point;
      point.position = Position(p);
      point.reader_position = {b.offset, b.offset | (switched_in ? kSwitchedInBit : 0)};
      for (auto& [t, state] : threads) {
        point.registers.emplace_back(ThreadId(t), t == tid ? here : RegisterFile(layout_->arch()));
        if (t != tid) state.waiting.push_back(ordinal - 1);
      }
      points.push_back(std::move(point));
      ordinals.push_back(ordinal - 1);
      if (points.size() > kMaxResumePoints) {
        std::vector<ResumePoint> kept;
        std::vector<std::uint64_t> kept_ordinals;
        for (std::size_t i = 0; i < points.size(); i += 2) {
          kept.push_back(std::move(points[i]));
          kept_ordinals.push_back(ordinals[i]);
        }
        points = std::move(kept);
        ordinals = std::move(kept_ordinals);
        stride *= 2;
      }
    }
    me.ran = true;
    prev_thread = tid;
  }
  return points;
}

}  // namespace backstep::core
