#include "testing/fake_target.h"

#include <algorithm>

namespace backstep::gdbstub {
namespace {

constexpr int kExpedited[] = {6, 7, 16};

bool IsSet(const std::atomic<bool>* interrupt) {
  return interrupt != nullptr && interrupt->load(std::memory_order_relaxed);
}

RegisterValue U64(std::uint64_t v, std::uint16_t size) {
  std::uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return RegisterValue::Known(std::span<const std::uint8_t>(bytes, size));
}

}  // namespace

const HostInfo FakeTarget::kHostInfo{"x86_64-pc-linux-gnu", 8, "linux", true, true};

FakeTarget::FakeTarget()
    : pcs{0x401000, 0x401004, 0x401008, 0x40100c, 0x401010,
          0x401004, 0x401008, 0x40100c, 0x401010, 0x401014},
      thread_at(pcs.size(), core::ThreadId(1)),
      threads{{core::ThreadId(1), "main", 0}, {core::ThreadId(2), "worker", std::nullopt}},
      writes{{3, 0x404000, 8}},
      documents{{"target.xml",
                 "<?xml version=\"1.0\"?><!DOCTYPE target SYSTEM \"gdb-target.dtd\"><target>"
                 "<architecture>i386:x86-64</architecture>"
                 "<xi:include href=\"64bit-core.xml\"/></target>"},
                {"64bit-core.xml", "<feature name=\"org.gnu.gdb.i386.core\"/>"}},
      auxv_bytes{0x21, 0x00, 0x23, 0x24, 0x7d, 0x2a, 0x00, 0x00} {
  std::vector<std::uint8_t> text(0x1000);
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<std::uint8_t>(i);
  memory[0x400000] = std::move(text);
  memory[0x404000] = std::vector<std::uint8_t>(0x10, 0);
}

RegisterLayout FakeTarget::register_layout() {
  RegisterLayout layout;  // no frame registers: `expedited` goes to every client
  layout.count = kRegisterCount;
  layout.pc = kPcRegnum;
  layout.expedited = kExpedited;
  return layout;
}

core::Expected<RegisterValue> FakeTarget::ReadRegister(core::ThreadId thread, int regnum) {
  if (!HasThread(thread)) return core::Status::NotFound("no such thread");
  if (regnum < 0 || regnum >= kRegisterCount) return core::Status::NotFound("no such register");
  std::uint64_t at = selected_frame ? *selected_frame : position;
  if (regnum == kUnknownRegnum) return RegisterValue::Unknown(8);
  if (regnum == kPcRegnum) return U64(pcs[at], 8);
  if (regnum == 17) return U64(0x246, 4);
  return U64(static_cast<std::uint64_t>(regnum) + 1, 8);
}

std::size_t FakeTarget::ReadMemory(core::Address addr, std::span<std::uint8_t> out) {
  auto it = memory.upper_bound(addr);
  if (it == memory.begin()) return 0;
  --it;
  std::uint64_t offset = addr - it->first;
  if (offset >= it->second.size()) return 0;
  std::size_t n = std::min<std::size_t>(out.size(), it->second.size() - offset);
  std::copy_n(it->second.begin() + static_cast<std::ptrdiff_t>(offset), n, out.begin());
  return n;
}

std::optional<StopReason> FakeTarget::WatchHit(std::uint64_t writer) const {
  for (const Write& w : writes) {
    if (w.position != writer) continue;
    for (const WatchRange& watch : inserted_watchpoints) {
      if (watch.kind != WatchKind::kWrite && watch.kind != WatchKind::kAccess) continue;
      if (w.addr < watch.addr + watch.length && watch.addr < w.addr + w.length) {
        return Watch{watch.kind, std::max(w.addr, watch.addr)};
      }
    }
  }
  return std::nullopt;
}

std::optional<StopReason> FakeTarget::BreakpointHit(std::uint64_t at) const {
  if (inserted_breakpoints.count({BreakpointType::kSoftware, pcs[at]})) return SwBreak{};
  if (inserted_breakpoints.count({BreakpointType::kHardware, pcs[at]})) return HwBreak{};
  return std::nullopt;
}

core::Expected<StopReason> FakeTarget::Resume(ResumeKind kind, std::optional<core::ThreadId> thread,
                                              const std::atomic<bool>* interrupt) {
  ++resume_count;
  last_resume_thread = thread;
  std::uint64_t last = pcs.size() - 1;
  if (kind == ResumeKind::kStep) {
    if (position == last) return StopReason(HistoryEdge{HistoryEdge::Side::kEnd});
    ++position;
    if (auto hit = WatchHit(position - 1)) return *hit;
    return StopReason(DoneStep{});
  }
  while (position < last) {
    if (IsSet(interrupt)) return StopReason(Interrupted{});
    ++position;
    if (auto hit = WatchHit(position - 1)) return *hit;  // trap-after: stop past the writer
    if (auto hit = BreakpointHit(position)) return *hit;
  }
  return StopReason(HistoryEdge{HistoryEdge::Side::kEnd});
}

core::Expected<StopReason> FakeTarget::ResumeBackward(ResumeKind kind,
                                                      std::optional<core::ThreadId> thread,
                                                      const std::atomic<bool>* interrupt) {
  ++resume_count;
  last_resume_thread = thread;
  if (kind == ResumeKind::kStep) {
    if (position == 0) return StopReason(HistoryEdge{HistoryEdge::Side::kBegin});
    --position;
    if (auto hit = WatchHit(position)) return *hit;
    return StopReason(DoneStep{});
  }
  while (position > 0) {
    if (IsSet(interrupt)) return StopReason(Interrupted{});
    --position;
    if (auto hit = WatchHit(position)) return *hit;  // reverse: stop at the writer
    if (auto hit = BreakpointHit(position)) return *hit;
  }
  return StopReason(HistoryEdge{HistoryEdge::Side::kBegin});
}

std::optional<std::string_view> FakeTarget::TargetDescription(std::string_view annex) {
  auto it = documents.find(annex);
  if (it == documents.end()) return std::nullopt;
  return std::string_view(it->second);
}

core::Status FakeTarget::InsertBreakpoint(BreakpointType type, core::Address addr, std::uint64_t) {
  inserted_breakpoints.insert({type, addr});
  return core::Status::Ok();
}

core::Status FakeTarget::RemoveBreakpoint(BreakpointType type, core::Address addr, std::uint64_t) {
  inserted_breakpoints.erase({type, addr});
  return core::Status::Ok();
}

bool FakeTarget::Supports(WatchKind kind) const {
  return kind == WatchKind::kWrite || caps.read_watchpoints;
}

core::Status FakeTarget::InsertWatchpoint(WatchKind kind, core::Address addr,
                                          std::uint64_t length) {
  inserted_watchpoints.insert({kind, addr, length});
  return core::Status::Ok();
}

core::Status FakeTarget::RemoveWatchpoint(WatchKind kind, core::Address addr,
                                          std::uint64_t length) {
  inserted_watchpoints.erase({kind, addr, length});
  return core::Status::Ok();
}

std::optional<TraceFrameHit> FakeTarget::FindFrame(const TraceFrameQuery& query,
                                                   std::optional<std::uint32_t> current) {
  if (const auto* by_number = std::get_if<FrameByNumber>(&query)) {
    if (by_number->frame >= pcs.size()) return std::nullopt;
    return TraceFrameHit{by_number->frame, TracepointOf(by_number->frame)};
  }
  for (std::uint64_t f = current ? *current + 1 : 0; f < pcs.size(); ++f) {
    core::Address pc = pcs[f];
    bool match = std::visit(
        [&](const auto& q) {
          using Q = std::decay_t<decltype(q)>;
          if constexpr (std::is_same_v<Q, FrameByPc>) return pc == q.pc;
          if constexpr (std::is_same_v<Q, FrameByTracepoint>)
            return TracepointOf(f) == q.tracepoint;
          if constexpr (std::is_same_v<Q, FrameInRange>) return q.lo <= pc && pc <= q.hi;
          if constexpr (std::is_same_v<Q, FrameOutsideRange>) return pc < q.lo || pc > q.hi;
          return false;
        },
        query);
    if (match) return TraceFrameHit{static_cast<std::uint32_t>(f), TracepointOf(f)};
  }
  return std::nullopt;
}

core::Status FakeTarget::SelectFrame(std::optional<std::uint32_t> frame) {
  selected_frame = frame;
  return core::Status::Ok();
}

core::Expected<std::string> FakeTarget::RunMonitorCommand(std::string_view command) {
  if (command == "info") return "position " + std::to_string(position) + "\n";
  if (command == "quiet") return std::string();
  if (command == "many") return std::string(100, 'x');
  if (command.starts_with("echo ")) return std::string(command.substr(5));
  return core::Status::InvalidArgument("unknown monitor command");
}

MemoryRegion FakeTarget::RegionAt(core::Address addr) {
  if (addr >= 0x400000 && addr < 0x401000)
    return {0x400000, 0x1000, true, true, false, true, "/bin/prog"};
  if (addr < 0x400000) return {0, 0x400000, false, false, false, false, ""};
  return {0x401000, 0, false, false, false, false, ""};
}

}  // namespace backstep::gdbstub
