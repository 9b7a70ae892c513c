// Writer round trips: BAP -> BapTraceWriter -> BAP keeps every event's
// kind, thread, reads, writes and register effect at the same position, and
// converting the result again gives the same bytes; a generated multi-thread
// trace with partial state goes through the writer and back with the same
// number of events, and the state the BAP reader gives at every position is
// a subset of the source's (same values where known).
#include <gtest/gtest.h>

#include <map>

#include "backstep/core/trace_writer.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "formats/bap/bap_test_util.h"
#include "formats/bap/bap_trace_writer.h"
#include "testing/bap_fixtures.h"
#include "testing/trace_oracle.h"

namespace backstep::core {
namespace {

// An event's effect, independent of how the writer orders the lists:
// kind, thread, reads, writes, and each register's last value.
std::string Effect(const Event& e) {
  std::string out(EventKindName(e.kind));
  out += " t" + std::to_string(e.thread.value);
  for (const MemoryAccess& m : e.reads) out += " R" + HexU64(m.address) + "=" + HexBytes(m.data);
  std::map<RegisterId, std::string> regs;
  for (const RegisterWrite& r : e.registers) {
    regs[r.reg] = HexBytes(std::span<const std::uint8_t>(r.value, X86_64().info(r.reg).size));
  }
  for (const auto& [id, v] : regs) out += " " + std::string(X86_64().info(id).name) + "=" + v;
  for (const MemoryAccess& m : e.writes) out += " W" + HexU64(m.address) + "=" + HexBytes(m.data);
  return out;
}

std::vector<std::string> Effects(TraceReader& reader) {
  std::vector<std::string> out;
  Event e;
  while (true) {
    auto more = reader.Next(&e);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    out.push_back(Effect(e));
  }
  return out;
}

Expected<std::vector<std::uint8_t>> Convert(TraceReader& in) {
  auto out = BapTraceWriter::InMemory();
  BACKSTEP_RETURN_IF_ERROR(ConvertTrace(in, *out, "out.frames").status());
  return out->bytes();
}

TEST(BapRoundTripTest, SmallTraceThroughTheWriter) {
  auto first = bap_test::OpenBytes(testing::SmallBapTrace());
  ASSERT_TRUE(first.ok());
  const std::vector<std::string> want = Effects(**first);
  auto again = bap_test::OpenBytes(testing::SmallBapTrace());
  ASSERT_TRUE(again.ok());
  auto bytes = Convert(**again);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto second = bap_test::OpenBytes(*bytes, "out.frames");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  // Thread 2's initial registers beyond its pc (its first frame's pre-list
  // values) go back into that frame's pre-list: no event is added, so every
  // position keeps its number (a leading key frame used to shift them).
  const auto initial = (*first)->InitialRegisters();
  const auto converted = (*second)->InitialRegisters();
  ASSERT_EQ(converted.size(), initial.size());
  for (std::size_t i = 0; i < initial.size(); ++i) {
    EXPECT_EQ(converted[i].first, initial[i].first);
    EXPECT_EQ(converted[i].second, initial[i].second) << "thread " << initial[i].first.value;
  }
  EXPECT_EQ((*second)->header().declared_events, (*first)->header().declared_events);
  EXPECT_EQ(Effects(**second), want);
  // Our own output converts to the same bytes.
  auto third = bap_test::OpenBytes(*bytes, "out.frames");
  ASSERT_TRUE(third.ok());
  auto bytes2 = Convert(**third);
  ASSERT_TRUE(bytes2.ok());
  EXPECT_EQ(*bytes2, *bytes);
  // And its TOC follows libtrace's convention: floor((n - 1) / m) entries.
  EXPECT_EQ((*second)->container().toc_frames_per_entry, 64u);
  EXPECT_EQ((*second)->container().toc_entries, 0u);
}

TEST(BapRoundTripTest, RefusesWhatBapCannotHold) {
  TraceHeader h;
  h.arch = &X86_64();
  h.address_kind = AddressKind::kPhysical;
  auto w = BapTraceWriter::InMemory();
  Status s = w->Begin(h, {}, {});
  EXPECT_TRUE(s.IsUnsupported());
  EXPECT_NE(s.message().find("physical-memory"), std::string::npos) << s.ToString();
  h.address_kind = AddressKind::kVirtual;
  w = BapTraceWriter::InMemory();
  ASSERT_TRUE(w->Begin(h, {}, {}).ok());
  Event e;
  e.thread = ThreadId(1);
  e.kind = EventKind::kFrame;
  e.flags = kEventClearsRegisters;
  s = w->Append(e);
  EXPECT_TRUE(s.IsUnsupported());
  EXPECT_NE(s.message().find("<memory>: event 0: BAP frames cannot express an event that clears"),
            std::string::npos)
      << s.ToString();
  e.flags = 0;
  e.thread = ThreadId(0);
  EXPECT_TRUE(w->Append(e).IsUnsupported());
}

TEST(BapRoundTripTest, InitialStateChangedBeforeTheFirstInstruction) {
  // rax is known at position 0 and a system call changes it before the
  // thread's first instruction: BapReader takes the initial value from that
  // instruction's pre-list, which holds one value, so it is refused.
  TraceHeader h;
  h.arch = &X86_64();
  RegisterFile regs(X86_64());
  regs.SetU64(X86_64().pc(), 0x401000);
  const RegisterId rax = *X86_64().Find("rax");
  regs.SetU64(rax, 1);
  auto w = BapTraceWriter::InMemory();
  ASSERT_TRUE(w->Begin(h, {{ThreadId(1), regs}}, {}).ok());
  Event e;
  e.thread = ThreadId(1);
  e.kind = EventKind::kSyscall;
  RegisterWrite write;
  write.reg = rax;
  write.value[0] = 2;
  e.registers.push_back(write);
  const Status s = w->Append(e);
  EXPECT_TRUE(s.IsUnsupported());
  EXPECT_EQ(s.message(),
            "<memory>: event 0: it changes rax of thread 1 before the thread's first instruction, "
            "whose pre-list holds its initial value (BAP frames have no other place for it)");
}

TEST(BapRoundTripTest, StateAfterTheLastFrameIsKept) {
  // BapReader knows after a thread's last frame only what the frame lists:
  // the writer lists every register the thread knows at the end in the last
  // frame's post-list (the pc after it included), so the final state is the
  // source's (it used to lose everything but the event's own registers).
  TraceHeader h;
  h.arch = &X86_64();
  const RegisterId rip = X86_64().pc(), rax = *X86_64().Find("rax"), rbx = *X86_64().Find("rbx");
  RegisterFile regs(X86_64());
  regs.SetU64(rip, 0x401000);
  regs.SetU64(rax, 1);
  regs.SetU64(rbx, 2);
  auto w = BapTraceWriter::InMemory();
  ASSERT_TRUE(w->Begin(h, {{ThreadId(1), regs}}, {}).ok());
  Event e;
  e.thread = ThreadId(1);
  RegisterWrite write;
  write.reg = rax;
  write.value[0] = 3;
  e.registers.push_back(write);
  write.reg = rip;
  write.value[0] = 0x03;
  write.value[1] = 0x10;
  write.value[2] = 0x40;
  e.registers.push_back(write);
  ASSERT_TRUE(w->Append(e).ok());
  e.thread = ThreadId(2);  // a thread that does not exist at position 0
  const Status s = w->Append(e);
  EXPECT_EQ(s.message(),
            "<memory>: event 1: thread 2 starts here, after position 0, and a BAP reader gives "
            "every thread its first pc from position 0");
  ASSERT_TRUE(w->Finish().ok());

  auto reader = bap_test::OpenBytes(w->bytes());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  RegisterFile state = (*reader)->InitialRegisters().at(0).second;
  EXPECT_EQ(state, regs);
  Event back;
  ASSERT_TRUE(*(*reader)->Next(&back));
  if (back.flags & kEventClearsRegisters) state.Clear();
  for (const RegisterWrite& r : back.registers) state.Apply(r);
  EXPECT_FALSE(*(*reader)->Next(&back));
  RegisterFile want = regs;
  want.SetU64(rax, 3);
  want.SetU64(rip, 0x401003);
  EXPECT_EQ(state, want);
}

// A generated trace: 3 threads, recorded reads, partial registers and
// image, syscalls/markers with effects, register operations.
testing::FakeTrace Generated(std::uint64_t seed) {
  testing::FakeTraceOptions o;
  o.seed = seed;
  o.events = 1500;
  o.threads = 3;
  o.records_reads = true;
  o.full_image = false;
  o.full_registers = false;
  return testing::GenerateFakeTrace(o);
}

TEST(BapRoundTripTest, GeneratedTraceKeepsWhatItKnows) {
  // Threads start at position 0 with an instruction (BapConvertible): the
  // rest is refused (InitialStateChangedBeforeTheFirstInstruction).
  const testing::FakeTrace fake = bap_test::BapConvertible(Generated(21));
  auto source = testing::OpenFakeTrace(testing::FakeTraceSource(fake));
  ASSERT_TRUE(source.ok());
  auto bytes = Convert(**source);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto bap = bap_test::OpenBytes(*bytes, "gen.frames");
  ASSERT_TRUE(bap.ok()) << bap.status().ToString();
  auto captured = testing::CaptureTrace(**bap);
  ASSERT_TRUE(captured.ok()) << captured.status().ToString();
  // The initial state rides in the first instructions: positions align.
  ASSERT_EQ(captured->events.size(), fake.events.size());
  const std::uint64_t k = 0;
  testing::TraceOracle want(fake), got(*captured);
  const RegisterId pc = X86_64().pc();
  std::uint64_t known_registers = 0, known_bytes = 0;
  const auto regions = testing::FakeDataRegions(AddressKind::kVirtual);
  for (std::uint64_t p = 0; p <= fake.events.size(); p += 7) {
    want.Seek(p);
    got.Seek(p + k);
    for (ThreadId t : got.all_threads()) {
      const RegisterFile* g = got.Registers(t);
      const RegisterFile* w = want.Registers(t);
      if (!g) continue;
      for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
        if (id == pc || X86_64().info(id).derived || !g->known(id)) continue;
        ++known_registers;
        ASSERT_TRUE(w && w->known(id))
            << "position " << p << " thread " << t.value << " " << X86_64().info(id).name;
        ASSERT_TRUE(std::ranges::equal(g->bytes(id), w->bytes(id)))
            << "position " << p << " thread " << t.value << " " << X86_64().info(id).name;
      }
    }
    for (const auto& [lo, hi] : regions) {
      for (Address a = lo; a < hi && a < lo + 512; ++a) {
        const auto b = got.Byte(a);
        if (!b) continue;
        ++known_bytes;
        ASSERT_EQ(want.Byte(a), b) << "position " << p << " address " << std::hex << a;
      }
    }
  }
  EXPECT_GT(known_registers, 1000u);
  EXPECT_GT(known_bytes, 1000u);
}

}  // namespace
}  // namespace backstep::core
