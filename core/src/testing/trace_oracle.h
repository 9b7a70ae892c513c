// TraceOracle: the naive reference that the index, the cursor and the
// searches are cross-checked against.
//
// It replays a FakeTrace event by event into a full state: one RegisterFile
// per thread and a byte map of known memory, applying each event in the
// documented order (reads observe the state before the event; then
// kEventClearsRegisters / kEventClearsMemory; then register writes and memory
// writes). Value inference is done the obvious way: a byte unknown at p is
// known if some event r >= p reads it and no event in [p, r) writes it or
// clears memory (a read before p is already in the byte map).
//
// Also precomputed per event: its thread, its pc-index pc (pc of the event's
// thread in the state before it, for kInstruction and kFrame events), and
// which written bytes change value (the only_changes rule).
//
// Cost: Seek backward replays from 0. Meant for traces of a few thousand
// events. Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "backstep/testing/fake_trace.h"

namespace backstep::core::testing {

class TraceOracle {
 public:
  explicit TraceOracle(const FakeTrace& trace);

  const FakeTrace& trace() const { return *trace_; }
  std::uint64_t event_count() const { return trace_->events.size(); }
  ThreadId thread_of(std::uint64_t event) const { return trace_->events[event].thread; }
  // The pc the pc index holds for event q, if any.
  std::optional<Address> pc_of(std::uint64_t event) const { return pcs_[event]; }
  // True if event w writes a byte of [lo, hi) whose value before w is unknown
  // or differs from its value after w.
  bool WriteChanges(std::uint64_t w, Address lo, Address hi) const;

  // Sequential state at position p.
  void Seek(std::uint64_t p);
  std::uint64_t position() const { return position_; }
  // nullptr for a thread that never appears.
  const RegisterFile* Registers(ThreadId thread) const;
  std::vector<ThreadId> threads() const;  // existing at position(), sorted
  std::vector<ThreadId> all_threads() const;
  ThreadId current_thread() const;
  // A byte (native address space) at position(), with value inference.
  std::optional<std::uint8_t> Byte(Address address) const;

  // Debugger (virtual) address -> native address. Default: identity for
  // virtual traces, FakeTranslate() for physical ones.
  using TranslateFn = std::function<std::optional<Address>(Address)>;
  void set_translate(TranslateFn fn) { translate_ = std::move(fn); }
  std::optional<Address> Translate(Address address) const { return translate_(address); }

 private:
  void Reset();
  void Apply(const FakeEvent& e);

  const FakeTrace* trace_;
  std::vector<std::optional<Address>> pcs_;
  std::vector<std::set<Address>> changed_;              // per event: written bytes that change
  std::map<std::uint64_t, std::uint64_t> first_event_;  // thread -> first event
  std::uint64_t position_ = 0;
  std::map<std::uint64_t, RegisterFile> registers_;
  std::optional<std::uint8_t> ImageByte(Address address) const;

  std::unordered_map<Address, std::uint8_t> memory_;  // known bytes besides the image
  bool cleared_ = false;                              // a memory clear hides the image
  TranslateFn translate_;
};

}  // namespace backstep::core::testing
