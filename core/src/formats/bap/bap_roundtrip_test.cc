// Writer round trips: BAP -> BapTraceWriter -> BAP keeps every event's
// kind, thread, reads, writes and register effect, and converting the
// result again gives the same bytes; a generated multi-thread trace with
// partial state goes through the writer and back and the state the BAP
// reader gives at every position is a subset of the source's (same values
// where known).
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
  // values) become a key frame first (the writer's rule for initial
  // state); then the same events.
  const auto initial = (*first)->InitialRegisters();
  ASSERT_EQ((*second)->InitialRegisters().size(), initial.size());
  for (std::size_t i = 0; i < initial.size(); ++i) {
    EXPECT_EQ((*second)->InitialRegisters()[i].second.u64(X86_64().pc()),
              initial[i].second.u64(X86_64().pc()));
  }
  EXPECT_EQ((*second)->header().declared_events, std::optional<std::uint64_t>(12));
  std::vector<std::string> got = Effects(**second);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0], "marker t2 rbx=0500000000000000 eflags=02020000 msr_c0000102=000000000080ffff");
  got.erase(got.begin());
  EXPECT_EQ(got, want);
  // Our own output converts to the same events (the initial registers
  // beyond the pcs, the first frames' pre-lists, become key frames again).
  auto third = bap_test::OpenBytes(*bytes, "out.frames");
  ASSERT_TRUE(third.ok());
  auto bytes2 = Convert(**third);
  ASSERT_TRUE(bytes2.ok());
  auto fourth = bap_test::OpenBytes(*bytes2, "out2.frames");
  ASSERT_TRUE(fourth.ok());
  std::vector<std::string> again_got = Effects(**fourth);
  while (!again_got.empty() && again_got[0].rfind("marker", 0) == 0) {
    again_got.erase(again_got.begin());
  }
  EXPECT_EQ(again_got, want);
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
  const testing::FakeTrace fake = Generated(21);
  auto source = testing::OpenFakeTrace(testing::FakeTraceSource(fake));
  ASSERT_TRUE(source.ok());
  auto bytes = Convert(**source);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto bap = bap_test::OpenBytes(*bytes, "gen.frames");
  ASSERT_TRUE(bap.ok()) << bap.status().ToString();
  auto captured = testing::CaptureTrace(**bap);
  ASSERT_TRUE(captured.ok()) << captured.status().ToString();
  // Key frames at the start carry the initial state beyond the pcs.
  const std::uint64_t k = captured->events.size() - fake.events.size();
  ASSERT_LE(k, 3u);
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
