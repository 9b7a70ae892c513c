// SignalStops (signal_stops.h): signal deliveries and system calls, where
// resumes stop for them, what $_siginfo reads there, and the end of the
// process.
#include "trace_target/signal_stops.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "backstep/core/event.h"
#include "backstep/core/event_notes.h"
#include "backstep/core/trace_reader.h"

namespace backstep::gdbstub {
namespace {

// Linux x86-64's siginfo_t (what gdb's $_siginfo type describes).
constexpr std::size_t kSiginfoSize = 128;

}  // namespace

bool SignalStops::active() const { return core::HasEventNotes(trace_.header()); }

void SignalStops::Note(std::uint64_t n, core::ThreadId thread, core::EventNotes notes,
                       Ending* found) {
  if (notes.signal > 0) {
    found->slots.push_back(
        {3 * n + Slot::kSignal, Slot::kSignal, static_cast<std::uint64_t>(notes.signal), thread});
  }
  if (notes.syscall >= 0) {
    const auto number = static_cast<std::uint64_t>(notes.syscall);
    found->slots.push_back({3 * n + Slot::kEntry, Slot::kEntry, number, thread});
    // exit and exit_group do not return.
    if (notes.exit_status < 0) {
      found->slots.push_back({3 * (n + 1) + Slot::kReturn, Slot::kReturn, number, thread});
    }
  }
  if (notes.execs) found->execs.push_back({n, thread, std::move(notes.exec_path)});
  if (notes.exit_status >= 0) found->exit_status = notes.exit_status;
}

core::Expected<const SignalStops::Ending*> SignalStops::Scan() {
  if (ending_.scanned) return &ending_;
  Ending found;
  if (const std::vector<core::NotedEvent>* noted = trace_.noted_events(); noted != nullptr) {
    // The index lists every event with notes: nothing to decode. The plain
    // system calls stay in its stream, searched when a resume catches them.
    plain_ = trace_.plain_syscalls();
    for (const core::NotedEvent& e : *noted) {
      core::EventNotes notes = core::ReadEventNotes(e.kind, e.description);
      // The process's end is the last event's (an event without notes ends nothing).
      if (e.event + 1 == trace_.event_count()) {
        found.killed_by = notes.killed_by;
        found.exits = notes.exits;
      }
      Note(e.event, e.thread, std::move(notes), &found);
    }
  } else {
    // An index without the list: one decoding pass (no replay) over the
    // trace, the first time a resume needs it.
    BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<core::TraceReader> reader, trace_.NewReader());
    core::Event event;
    for (std::uint64_t n = 0;; ++n) {
      BACKSTEP_ASSIGN_OR_RETURN(bool more, reader->Next(&event));
      if (!more) break;
      core::EventNotes notes = core::ReadEventNotes(event);
      found.killed_by = notes.killed_by;
      found.exits = notes.exits;
      Note(n, event.thread, std::move(notes), &found);
    }
  }
  std::sort(found.slots.begin(), found.slots.end(),
            [](const Slot& a, const Slot& b) { return a.key < b.key; });
  found.scanned = true;
  ending_ = std::move(found);
  return &ending_;
}

bool SignalStops::Stops(const Slot& slot) const {
  if (slot.kind == Slot::kSignal) {
    return std::find(pass_signals_.begin(), pass_signals_.end(), static_cast<int>(slot.number)) ==
           pass_signals_.end();
  }
  if (!catch_syscalls_) return false;
  return catch_syscalls_->empty() || std::find(catch_syscalls_->begin(), catch_syscalls_->end(),
                                               slot.number) != catch_syscalls_->end();
}

core::Expected<std::optional<SignalStops::Slot>> SignalStops::SlotBefore(
    core::Direction direction, const core::StopEvent& stop) {
  BACKSTEP_ASSIGN_OR_RETURN(const Ending* ending, Scan());
  const std::vector<Slot>& slots = ending->slots;
  const std::uint64_t p = served_.position().value, s = stop.position.value;
  const bool edge = stop.reason != core::StopEvent::Reason::kBreakpoint &&
                    stop.reason != core::StopEvent::Reason::kWatch;
  const auto by_key = [](const Slot& slot, std::uint64_t key) { return slot.key < key; };
  if (direction == core::Direction::kForward) {
    // After a plain stop at p the system call at p is still to be made
    // (a breakpoint on `syscall`), the rest at p is past. At s, a return
    // comes before a breakpoint or watchpoint, an entry after it.
    const std::uint64_t after = stop_slot_ ? stop_slot_->key : 3 * p + Slot::kSignal;
    const std::uint64_t last = 3 * s + (edge ? Slot::kEntry : Slot::kSignal);
    std::optional<Slot> found;
    for (auto it =
             std::upper_bound(slots.begin(), slots.end(), after,
                              [](std::uint64_t key, const Slot&slot) { return key < slot.key; });
         it != slots.end() && it->key <= last; ++it) {
      if (Stops(*it)) {
        found = *it;
        break;
      }
    }
    // A plain system call before it wins.
    if (std::optional<Slot> plain = NextPlainSlot(after, found ? found->key - 1 : last)) {
      return plain;
    }
    return found;
  }
  // Backward: before the last stop's slot, or before anything at p. At s,
  // an entry is met before the breakpoint or watchpoint, the rest after it.
  const std::uint64_t before = stop_slot_ ? stop_slot_->key : 3 * p;
  const std::uint64_t first = 3 * s + (edge ? Slot::kReturn : Slot::kEntry);
  std::optional<Slot> found;
  for (auto it = std::lower_bound(slots.begin(), slots.end(), before, by_key);
       it != slots.begin();) {
    --it;
    if (it->key < first) break;
    if (Stops(*it)) {
      found = *it;
      break;
    }
  }
  if (std::optional<Slot> plain = PrevPlainSlot(before, found ? found->key + 1 : first)) {
    return plain;
  }
  return found;
}

const std::vector<core::PlainSyscall>& SignalStops::PlainBlock(std::uint64_t b) {
  if (b != plain_block_index_) {
    plain_->Decode(b, &plain_block_);
    plain_block_index_ = b;
  }
  return plain_block_;
}

std::optional<SignalStops::Slot> SignalStops::NextPlainSlot(std::uint64_t after,
                                                            std::uint64_t last) {
  if (!catch_syscalls_ || !plain_ || plain_->size() == 0 || last <= after) return std::nullopt;
  // The return of call n is slot 3 * (n + 1): calls from event after / 3 - 1 on.
  const std::uint64_t from = after / 3 > 0 ? after / 3 - 1 : 0;
  for (std::uint64_t b = plain_->BlockAt(from); b < plain_->block_count(); ++b) {
    if (plain_->block_first_event(b) > last / 3) break;
    for (const core::PlainSyscall& call : PlainBlock(b)) {
      for (const Slot& slot : PlainSlots(call)) {
        if (slot.key <= after) continue;
        if (slot.key > last) return std::nullopt;
        if (Stops(slot)) return slot;
      }
    }
  }
  return std::nullopt;
}

std::optional<SignalStops::Slot> SignalStops::PrevPlainSlot(std::uint64_t before,
                                                            std::uint64_t first) {
  if (!catch_syscalls_ || !plain_ || plain_->size() == 0 || before <= first) return std::nullopt;
  for (std::uint64_t b = plain_->BlockAt(before / 3) + 1; b-- > 0;) {
    const std::vector<core::PlainSyscall>& calls = PlainBlock(b);
    for (auto call = calls.rbegin(); call != calls.rend(); ++call) {
      const std::array<Slot, 2> slots = PlainSlots(*call);
      for (auto slot = slots.rbegin(); slot != slots.rend(); ++slot) {
        if (slot->key >= before) continue;
        if (slot->key < first) return std::nullopt;
        if (Stops(*slot)) return *slot;
      }
    }
  }
  return std::nullopt;
}

std::array<SignalStops::Slot, 2> SignalStops::PlainSlots(const core::PlainSyscall& call) {
  return {Slot{3 * call.event + Slot::kEntry, Slot::kEntry, call.number, call.thread},
          Slot{3 * (call.event + 1) + Slot::kReturn, Slot::kReturn, call.number, call.thread}};
}

core::Expected<std::optional<SignalStops::Slot>> SignalStops::DeliveryAt(std::uint64_t position,
                                                                         core::ThreadId thread) {
  BACKSTEP_ASSIGN_OR_RETURN(const Ending* ending, Scan());
  const std::uint64_t key = 3 * position + Slot::kSignal;
  const auto it = std::lower_bound(ending->slots.begin(), ending->slots.end(), key,
                                   [](const Slot& slot, std::uint64_t k) { return slot.key < k; });
  if (it == ending->slots.end() || it->key != key || it->thread != thread || !Stops(*it)) {
    return std::optional<Slot>();
  }
  return std::optional<Slot>(*it);
}

core::Expected<std::optional<core::Position>> SignalStops::DeliveryWithFrameAt(
    core::Address slot, core::ThreadId thread, core::Position before) {
  // NOTE: the frame's return address is not found by its last write: a
  // recording keeps only changed bytes, and every delivery of a handler
  // stores the same restorer address at the same place.
  constexpr int kMaxDeliveries = 64;
  BACKSTEP_ASSIGN_OR_RETURN(const Ending* ending, Scan());
  const std::vector<Slot>& slots = ending->slots;
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<core::Cursor> probe, trace_.NewCursor());
  const core::RegisterId sp = trace_.arch().sp();
  int tried = 0;
  for (auto it = std::lower_bound(slots.begin(), slots.end(), 3 * before.value,
                                  [](const Slot&s, std::uint64_t key) { return s.key < key; });
       it != slots.begin() && tried < kMaxDeliveries;) {
    --it;
    if (it->kind != Slot::kSignal || it->thread != thread) continue;
    ++tried;
    BACKSTEP_RETURN_IF_ERROR(probe->Seek(core::Position(it->position() + 1)));
    auto registers = probe->Registers(thread);
    if (registers.ok() && (*registers)->known(sp) && (*registers)->u64(sp) == slot) {
      return std::optional<core::Position>(core::Position(it->position()));
    }
  }
  return std::optional<core::Position>();
}

core::Expected<const std::vector<SignalStops::ExecPoint>*> SignalStops::Execs() {
  BACKSTEP_ASSIGN_OR_RETURN(const Ending* ending, Scan());
  return &ending->execs;
}

StopReason SignalStops::StoppedAt(const Slot& slot) {
  stop_slot_ = slot;
  switch (slot.kind) {
    case Slot::kReturn:
      return StopReason(SyscallReturn{slot.number});
    case Slot::kEntry:
      return StopReason(SyscallEntry{slot.number});
    case Slot::kSignal:
      break;
  }
  return StopReason(Signaled{static_cast<int>(slot.number)});
}

core::Expected<std::optional<StopReason>> SignalStops::EndOfProcess() {
  if (served_.position() < served_.last() || served_.last().value < trace_.event_count()) {
    return std::optional<StopReason>();
  }
  BACKSTEP_ASSIGN_OR_RETURN(const Ending* ending, Scan());
  if (!ending->exits) return std::optional<StopReason>();  // cut short: no end recorded
  if (ending->killed_by > 0) return std::optional<StopReason>(Terminated{ending->killed_by});
  if (ending->exit_status >= 0) {
    return std::optional<StopReason>(Exited{static_cast<std::uint8_t>(ending->exit_status)});
  }
  return std::optional<StopReason>();
}

core::Expected<std::vector<std::uint8_t>> SignalStops::SignalInfo() {
  if (!stop_slot_ || stop_slot_->kind != Slot::kSignal) {
    return core::Status::NotFound("the last stop was not for a signal");
  }
  // The delivery is the event at the stop's position.
  BACKSTEP_ASSIGN_OR_RETURN(const core::Event* event, served_.cursor().CurrentEvent());
  core::EventNotes notes = core::ReadEventNotes(*event);
  if (notes.siginfo.size() == kSiginfoSize) return std::move(notes.siginfo);
  // Not recorded: only the number is known.
  std::vector<std::uint8_t> info(kSiginfoSize, 0);
  const auto signo = static_cast<std::int32_t>(stop_slot_->number);
  std::memcpy(info.data(), &signo, sizeof signo);  // si_signo
  return info;
}

}  // namespace backstep::gdbstub
