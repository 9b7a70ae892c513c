// `backstep export`: exported frames read back through TfileReader and a
// Trace cursor hold the source's registers and the known bytes of every
// collected range; layout rules (one tracepoint per pc, equal frame sizes,
// the position tsv); the >32767-pcs refusal; argument errors.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "backstep/core/byte_source.h"
#include "backstep/core/cursor.h"
#include "backstep/core/tfile_export.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "formats/tfile/tfile_reader.h"

namespace backstep::core {
namespace {

using testing::FakeEvent;
using testing::FakeTrace;
using testing::FakeTraceOptions;

std::shared_ptr<Trace> Generated(std::uint64_t seed, int threads) {
  FakeTraceOptions o;
  o.seed = seed;
  o.events = 700;
  o.threads = threads;
  o.records_reads = true;
  o.full_image = false;  // unknown bytes must be left out
  auto trace = testing::OpenFakeInMemory(testing::GenerateFakeTrace(o));
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  return *trace;
}

struct Exported {
  std::vector<std::uint8_t> bytes;
  std::unique_ptr<TfileReader> reader;
  std::shared_ptr<Trace> trace;  // the export opened as a trace
};

Exported Export(const Trace& source, const TfileExportOptions& options) {
  Exported e;
  auto summary = ExportTfileToMemory(source, &e.bytes, options);
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  auto reader = TfileReader::Open(MemorySource(e.bytes, "export.tf"));
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  e.reader = std::move(*reader);
  const std::vector<std::uint8_t> copy = e.bytes;
  auto trace = Trace::OpenWith(
      [copy]() -> Expected<std::unique_ptr<TraceReader>> {
        BACKSTEP_ASSIGN_OR_RETURN(auto r, TfileReader::Open(MemorySource(copy, "export.tf")));
        return std::unique_ptr<TraceReader>(std::move(r));
      },
      "");
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  e.trace = *trace;
  return e;
}

// The registers gdb's layout carries (what an R block can hold).
bool InLayout(const TfileRegisterLayout& layout, RegisterId id) {
  for (const auto& slot : layout.slots()) {
    if (slot.reg == id) return true;
  }
  return false;
}

void CheckRoundTrip(const Trace& source, const TfileExportOptions& options,
                    std::uint64_t expected_frames) {
  Exported e = Export(source, options);
  ASSERT_EQ(e.reader->frame_count(), expected_frames);
  ASSERT_TRUE(e.reader->damage().ok());
  auto src = source.NewCursor();
  auto dst = e.trace->NewCursor();
  ASSERT_TRUE(src.ok() && dst.ok());
  std::set<std::uint32_t> sizes;
  std::map<Address, int> tracepoint_of_pc;
  for (std::uint64_t n = 0; n < expected_frames; ++n) {
    auto frame = e.reader->ReadFrame(n);
    ASSERT_TRUE(frame.ok());
    sizes.insert(frame->header.size);
    ASSERT_FALSE(frame->tsv_values.empty());
    const auto position = static_cast<std::uint64_t>(frame->tsv_values[0].value);
    if (options.at_pcs.empty()) {
      EXPECT_EQ(position, options.from.value + n * options.every);
    }
    ASSERT_TRUE((*src)->Seek(Position(position)).ok());
    ASSERT_TRUE((*dst)->Seek(Position(n + 1)).ok());
    const ThreadId thread = (*src)->current_thread();
    const Address pc = (*src)->Pc(thread).value_or(0);
    if (!options.at_pcs.empty()) {
      EXPECT_NE(std::find(options.at_pcs.begin(), options.at_pcs.end(), pc), options.at_pcs.end());
    }
    // One tracepoint per pc, at that pc.
    const TfileTracepoint* tp = e.reader->FrameTracepoint(n);
    ASSERT_NE(tp, nullptr);
    EXPECT_EQ(tp->address, pc) << "frame " << n;
    auto [it, fresh] = tracepoint_of_pc.emplace(pc, e.reader->frame_tracepoint(n));
    EXPECT_EQ(it->second, e.reader->frame_tracepoint(n)) << "pc " << pc << " frame " << n;

    // Registers: every register the source knows, as the export reads back.
    auto want = (*src)->Registers(thread);
    auto got = (*dst)->Registers((*dst)->current_thread());
    ASSERT_TRUE(want.ok() && got.ok());
    for (std::size_t id = 0; id < X86_64().register_count(); ++id) {
      const auto rid = static_cast<RegisterId>(id);
      if (!InLayout(e.reader->layout(), rid)) continue;
      const std::size_t size = X86_64().info(rid).size;
      std::vector<std::uint8_t> a(size), b(size);
      if (!(*want)->Read(rid, a)) continue;  // unknown: written as zeros
      ASSERT_TRUE((*got)->Read(rid, b)) << X86_64().info(rid).name;
      EXPECT_EQ(a, b) << X86_64().info(rid).name << " at position " << position;
    }

    // Memory: the collected ranges hold exactly the source's known bytes.
    std::vector<std::pair<Address, std::uint64_t>> ranges;
    std::vector<std::uint8_t> sp(8);
    if ((*want)->Read(X86_64().sp(), sp)) {
      Address rsp = 0;
      for (int i = 7; i >= 0; --i) rsp = (rsp << 8) | sp[i];
      ranges.emplace_back(rsp - options.stack_below, options.stack_below + options.stack_above);
    }
    for (const auto& m : options.memory) ranges.emplace_back(m.address, m.length);
    if (auto event = (*src)->CurrentEvent(); event.ok()) {
      for (const auto& a : (*event)->writes) ranges.emplace_back(a.address, a.data.size());
      for (const auto& a : (*event)->reads) ranges.emplace_back(a.address, a.data.size());
    }
    for (const auto& [address, length] : ranges) {
      std::vector<std::uint8_t> b1(length), k1(length), b2(length), k2(length);
      ASSERT_TRUE((*src)->ReadMemory(address, b1, k1).ok());
      ASSERT_TRUE((*dst)->ReadMemory(address, b2, k2).ok());
      for (std::size_t i = 0; i < length; ++i) {
        ASSERT_EQ(k1[i], k2[i]) << "known at " << address + i << ", position " << position;
        if (k1[i]) {
          ASSERT_EQ(b1[i], b2[i]) << "byte at " << address + i;
        }
      }
    }
    // Nothing outside what was collected.
    std::uint8_t byte = 0, known = 0;
    ASSERT_TRUE((*dst)->ReadMemory(0x10, {&byte, 1}, {&known, 1}).ok());
    EXPECT_EQ(known, 0);
  }
  EXPECT_EQ(sizes.size(), 1u) << "frames must all have the same size (gdb 13.1's seek bug)";
  // The decoy header for gdb's first search after opening: at offset S,
  // tracepoint 1, size S; invisible to the reader (and to gdb) otherwise.
  const std::uint32_t s = *sizes.begin();
  ASSERT_GT(e.bytes.size(), s + 6u);
  const std::uint8_t decoy[6] = {1,
                                 0,
                                 static_cast<std::uint8_t>(s),
                                 static_cast<std::uint8_t>(s >> 8),
                                 static_cast<std::uint8_t>(s >> 16),
                                 static_cast<std::uint8_t>(s >> 24)};
  EXPECT_TRUE(std::equal(decoy, decoy + 6, e.bytes.begin() + s));
  EXPECT_TRUE(e.reader->definitions().warnings.empty()) << e.reader->definitions().warnings[0];
  // gdb creates tracepoints in reverse line order: descending lines give
  // local numbers equal to the target's.
  const auto& tps = e.reader->tracepoints();
  for (std::size_t i = 0; i < tps.size(); ++i) {
    EXPECT_EQ(e.reader->definitions().GdbLocalNumber(i), static_cast<int>(tps[i].number));
  }
}

TEST(TfileExporterTest, RoundTripEveryPosition) {
  auto source = Generated(3, 1);
  TfileExportOptions options;
  options.from = Position(40);
  options.to = Position(400);
  options.memory = {{testing::FakeDataRegions(AddressKind::kVirtual)[0].first, 300}};
  CheckRoundTrip(*source, options, 361);
}

TEST(TfileExporterTest, RoundTripEveryKThreadsAndEnd) {
  auto source = Generated(5, 3);
  TfileExportOptions options;
  options.from = Position(1);
  options.every = 7;  // 1, 8, ..., 694; the end (700) is not on the grid
  options.stack_below = 64;
  options.stack_above = 64;
  CheckRoundTrip(*source, options, 100);
}

TEST(TfileExporterTest, RoundTripAtPcs) {
  auto source = Generated(7, 1);
  const std::vector<Address> pool = testing::FakePcPool();
  TfileExportOptions options;
  options.at_pcs = {pool[0], pool[3]};
  // Count the expected positions independently.
  auto cursor = source->NewCursor();
  std::uint64_t expected = 0;
  for (std::uint64_t p = 0; p <= source->event_count(); ++p) {
    ASSERT_TRUE((*cursor)->Seek(Position(p)).ok());
    auto pc = (*cursor)->Pc((*cursor)->current_thread());
    if (pc && (*pc == pool[0] || *pc == pool[3])) ++expected;
  }
  ASSERT_GT(expected, 2u);
  CheckRoundTrip(*source, options, expected);
}

// A trace whose every event moves to a new pc.
std::shared_ptr<Trace> DistinctPcs(std::size_t events) {
  FakeTrace t;
  RegisterFile regs(X86_64());
  regs.SetU64(*X86_64().Find("rip"), 0x100000);
  regs.SetU64(*X86_64().Find("rsp"), 0x7000);
  t.initial_registers = {{ThreadId(1), regs}};
  for (std::size_t i = 0; i < events; ++i) {
    FakeEvent e;
    e.thread = ThreadId(1);
    RegisterWrite w;
    w.reg = *X86_64().Find("rip");
    const std::uint64_t pc = 0x100000 + 4 * (i + 1);
    for (int b = 0; b < 8; ++b) w.value[b] = static_cast<std::uint8_t>(pc >> (8 * b));
    e.registers = {w};
    t.events.push_back(std::move(e));
  }
  auto trace = testing::OpenFakeInMemory(t);
  EXPECT_TRUE(trace.ok());
  return *trace;
}

TEST(TfileExporterTest, MoreThan32767PcsIsRefusedWithAWayOut) {
  auto source = DistinctPcs(32767);  // positions 0..32767: 32768 pcs
  std::vector<std::uint8_t> out;
  auto s = ExportTfileToMemory(*source, &out, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("32767"), std::string::npos) << s.status().ToString();
  EXPECT_NE(s.status().message().find("--at-pc"), std::string::npos);
  EXPECT_NE(s.status().message().find("position 32767"), std::string::npos);
  // Exactly 32767 distinct pcs fit.
  TfileExportOptions fits;
  fits.to = Position(32766);
  out.clear();
  auto ok = ExportTfileToMemory(*source, &out, fits);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->tracepoints, 32767u);
  auto reader = TfileReader::Open(MemorySource(out, "big.tf"));
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->frame_count(), 32767u);
  EXPECT_EQ((*reader)->frame_tracepoint(32766), 32767);
  EXPECT_EQ((*reader)->FrameTracepoint(32766)->address, 0x100000u + 4 * 32766);
}

Status ExportError(const Trace& trace, const TfileExportOptions& options) {
  std::vector<std::uint8_t> out;
  auto s = ExportTfileToMemory(trace, &out, options);
  return s.ok() ? Status::Ok() : s.status();
}

TEST(TfileExporterTest, ArgumentErrorsNameTheArgument) {
  auto source = DistinctPcs(50);
  TfileExportOptions o;
  o.from = Position(30);
  o.to = Position(20);
  EXPECT_EQ(ExportError(*source, o).message(), "--from 30 is after --to 20");
  o = {};
  o.to = Position(51);
  EXPECT_NE(ExportError(*source, o).message().find("--to 51 is past the end"), std::string::npos);
  o = {};
  o.from = Position(99);
  EXPECT_NE(ExportError(*source, o).message().find("--from 99 is past the end"), std::string::npos);
  o = {};
  o.every = 0;
  EXPECT_NE(ExportError(*source, o).message().find("--every 0"), std::string::npos);
  o = {};
  o.every = 2;
  o.at_pcs = {0x100004};
  EXPECT_NE(ExportError(*source, o).message().find("--at-pc"), std::string::npos);
  o = {};
  o.at_pcs = {0x5};
  EXPECT_NE(ExportError(*source, o).message().find("no position selected"), std::string::npos);
  o = {};
  o.memory = {{0x1000, 0}};
  EXPECT_NE(ExportError(*source, o).message().find("--mem 0x1000:0"), std::string::npos);
  // The end position alone is a valid export.
  o = {};
  o.from = Position(50);
  EXPECT_TRUE(ExportError(*source, o).ok());
}

TEST(TfileExporterTest, ParsesMemoryRanges) {
  auto r = ParseTfileMemoryRange("0x601040:64");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (TfileMemoryRange{0x601040, 64}));
  r = ParseTfileMemoryRange("4096:0x10");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (TfileMemoryRange{4096, 16}));
  for (const char* bad : {"0x601040", "0x601040:", ":64", "zz:4", "0x10:4k", "0x10:0",
                          "0xffffffffffffffff:2", "1:99999999999"}) {
    auto e = ParseTfileMemoryRange(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(std::string("--mem '") + bad + "'"), std::string::npos)
        << e.status().message();
  }
}

}  // namespace
}  // namespace backstep::core
