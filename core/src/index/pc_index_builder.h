// PcIndexBuilder: builds the pc index of one index segment in memory.
//
// For each executed pc, its events in increasing order: blocks of
// kPostingsPerBlock postings, each block's first event in a SkipRecord and
// the others as varint deltas. A pc always executed right after the same
// other pc, as often as it (an instruction of a basic block after the first),
// is a follower: its record names that leader and the distance, and it has no
// postings of its own. So a loop body costs about one byte per executed basic
// block plus 16 bytes per 128 executions of the block.
//
// Memory: about 80 bytes per distinct pc plus the encoded postings, until
// Flush(). Thread-safety: one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "index/append_buffer.h"
#include "index/index_format.h"
#include "index/index_sink.h"

namespace backstep::core {

class PcIndexBuilder {
 public:
  // Events must arrive in increasing order. Inlined by force (GCC would
  // not), with its common steps (the pc found as the previous pc's
  // successor, one delta appended) inline: once per event, the call and its
  // saved registers were a fifth of it (20 M instructions at 10^6 events).
  [[gnu::always_inline]] void Add(std::uint64_t pc, std::uint64_t event) {
    Postings& p = Find(pc);
    // The next event's pc is most likely this one's successor last time:
    // its state is loaded while the next event decodes.
    if (p.next) {
      __builtin_prefetch(p.next);
      __builtin_prefetch(reinterpret_cast<const char*>(p.next) + 64);
    }
    Postings* before = previous_ && previous_event_ + 1 == event ? previous_ : nullptr;
    if (before == &p) before = nullptr;  // a pc repeated in place leads itself
    if (p.count == 0) {
      p.follows = before;
    } else if (p.follows != before) {
      p.follows = nullptr;
    }
    previous_ = &p;
    previous_event_ = event;
    if (p.count % kPostingsPerBlock == 0) {
      StartBlock(p, event);
    } else if (event - p.last == p.run_delta) {
      ++p.run_extra;
    } else {
      EndRun(p);
      p.run_delta = event - p.last;
      std::uint8_t* const buf = p.data.Reserve(10);  // in place (AppendBuffer::Reserve)
      std::uint8_t* out = buf;
      PutVarint(p.run_delta, out);
      p.data.Commit(out - buf);
      memory_bytes_ += out - buf;
    }
    p.last = event;
    ++p.count;
  }
  std::uint64_t memory_bytes() const { return memory_bytes_; }
  // Writes postings, skip tables and the sorted PcRecords; returns (offset of
  // the PcRecords, count). The builder is then empty.
  std::pair<std::uint64_t, std::uint64_t> Flush(IndexSink& sink);

 private:
  struct Postings {
    AppendBuffer data;
    std::vector<SkipRecord> skips;  // data_rel relative to `data`
    std::uint64_t last = 0;
    std::uint64_t count = 0;
    // The block's last delta written (0: none yet) and how many more of it
    // came since, not written yet (PostingDeltas: a run).
    std::uint64_t run_delta = 0;
    std::uint64_t run_extra = 0;
    // The pc of the event before every posting so far (null when some
    // posting had none, or a different one).
    Postings* follows = nullptr;
    // The pc that came right after this one last time, and its postings: a
    // lookup cache (a basic block's pcs come in the same order every time).
    Postings* next = nullptr;
    std::uint64_t next_pc = 0;
    // Set by Flush(): the record's index, and the leader this pc's postings
    // are a shift of (itself, shift 0, when it is no follower).
    std::uint64_t index = 0;
    Postings* leader = nullptr;
    std::uint64_t shift = 0;
  };
  // Resolves p.leader and p.shift (followers of followers lead to the first
  // pc of the chain).
  static void Resolve(Postings& p);
  // Writes p's pending repeats of run_delta (as many deltas, or 0 and
  // their count, whichever is shorter). Most deltas end no run: that test
  // is inline.
  void EndRun(Postings& p) {
    if (p.run_extra != 0) WriteRun(p);
  }
  void WriteRun(Postings& p);
  // The postings of `pc`: the previous pc's successor last time, else
  // LookUp's.
  Postings& Find(std::uint64_t pc) {
    if (previous_ && previous_->next && previous_->next_pc == pc) return *previous_->next;
    return LookUp(pc);
  }
  // A direct-mapped cache in front of the hash map (a program's hot loop
  // has few pcs); records the result as the previous pc's successor.
  Postings& LookUp(std::uint64_t pc);
  // p's posting `event` starts a block of kPostingsPerBlock: a SkipRecord.
  void StartBlock(Postings& p, std::uint64_t event);
  struct Slot {
    std::uint64_t pc = 0;
    Postings* postings = nullptr;  // into pcs_ (nodes are stable)
  };
  static constexpr int kCacheBits = 10;

  std::unordered_map<std::uint64_t, Postings> pcs_;
  std::array<Slot, 1 << kCacheBits> cache_{};
  Postings* previous_ = nullptr;  // the pc of event previous_event_
  std::uint64_t previous_event_ = 0;
  std::uint64_t memory_bytes_ = 0;
};

}  // namespace backstep::core
