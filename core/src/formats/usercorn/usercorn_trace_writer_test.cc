// UsercornTraceWriter (`backstep convert --to usercorn`): a random
// single-thread FakeTrace converted to usercorn must replay to the same
// states for every register usercorn carries and for memory, with the same
// positions; usercorn itself converts to the same events; and what usercorn
// cannot express is Unsupported.
#include "formats/usercorn/usercorn_trace_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "backstep/core/format_registry.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "formats/usercorn/usercorn_test_util.h"
#include "testing/usercorn_fixtures.h"

namespace backstep::core {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("usercorn_tw_" + std::to_string(getpid()) + "_" + name))
      .string();
}

Status Convert(TraceReader& in, const std::string& path) {
  const FormatInfo* usercorn = FindFormat("usercorn");
  if (usercorn == nullptr || !usercorn->create_writer) return Status::NotFound("no writer");
  BACKSTEP_ASSIGN_OR_RETURN(auto writer, usercorn->create_writer(path));
  return ConvertTrace(in, *writer, path).status();
}

// Registers usercorn carries (alone or as the high half of YMMn or FIP/FDP),
// and rip.
bool Carried(RegisterId id) {
  const UsercornArch& u = UsercornX86_64();
  return id == X86_64().pc() || u.UnicornOf(id) != kNoUnicornRegister ||
         u.WideOf(id) != kNoUnicornRegister;
}

void ExpectSameCarried(const RegisterFile& a, const RegisterFile& b, const std::string& where) {
  for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
    if (!Carried(id) || !a.known(id)) continue;
    ASSERT_TRUE(b.known(id)) << where << " " << X86_64().info(id).name;
    ASSERT_EQ(HexBytes(a.bytes(id)), HexBytes(b.bytes(id)))
        << where << " " << X86_64().info(id).name;
  }
}

// Replays both readers from their current positions: same number of
// events, same carried registers and same memory after each.
void ExpectSameReplay(TraceReader& a, TraceReader& b) {
  RegisterFile ra = a.InitialRegisters().at(0).second;
  RegisterFile rb = b.InitialRegisters().at(0).second;
  ExpectSameCarried(ra, rb, "initial");
  std::map<Address, std::uint8_t> wa, wb;
  Event ea, eb;
  for (std::uint64_t n = 0;; ++n) {
    auto ma = a.Next(&ea);
    auto mb = b.Next(&eb);
    ASSERT_TRUE(ma.ok() && mb.ok()) << mb.status().ToString();
    ASSERT_EQ(*ma, *mb) << "event " << n;  // positions are kept
    if (!*ma) break;
    for (const RegisterWrite& w : ea.registers) ra.Apply(w);
    for (const RegisterWrite& w : eb.registers) rb.Apply(w);
    for (const auto& m : ea.writes) {
      for (std::size_t i = 0; i < m.data.size(); ++i) wa[m.address + i] = m.data[i];
    }
    for (const auto& m : eb.writes) {
      for (std::size_t i = 0; i < m.data.size(); ++i) wb[m.address + i] = m.data[i];
    }
    ExpectSameCarried(ra, rb, "after event " + std::to_string(n));
    if (n % 100 == 0) {
      ASSERT_EQ(wa, wb) << "after event " << n;
    }
  }
  EXPECT_EQ(wa, wb);
}

TEST(UsercornTraceWriterTest, ConvertedFakeTraceReplaysToTheSameStates) {
  for (std::uint64_t seed : {21, 22}) {
    testing::FakeTraceOptions o;
    o.seed = seed;
    o.events = 3000;
    const testing::FakeTrace fake = testing::GenerateFakeTrace(o);
    auto source = testing::OpenFakeTrace(testing::FakeTraceSource(fake));
    ASSERT_TRUE(source.ok());
    const std::string path = TempPath("convert_" + std::to_string(seed) + ".ucir");
    Status s = Convert(**source, path);
    ASSERT_TRUE(s.ok()) << s.ToString();
    auto converted = OpenTraceFile(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(converted.ok()) << converted.status().ToString();
    auto again = testing::OpenFakeTrace(testing::FakeTraceSource(fake));
    TraceReader& a = **again;
    TraceReader& b = **converted;
    EXPECT_EQ(b.header().format, "usercorn");
    ASSERT_EQ(b.header().regions.size(), a.header().regions.size());
    for (const MemoryRegion& r : a.header().regions) {
      std::vector<std::uint8_t> ma(r.size), ka(r.size), mb(r.size), kb(r.size);
      a.ReadInitialMemory(r.start, ma, ka);
      b.ReadInitialMemory(r.start, mb, kb);
      ASSERT_EQ(ma, mb);
      ASSERT_EQ(kb, std::vector<std::uint8_t>(r.size, 1));
    }
    ExpectSameReplay(a, b);
  }
}

TEST(UsercornTraceWriterTest, UsercornConvertsToTheSameEvents) {
  auto in = usercorn_test::OpenBytes(testing::GeneratedUsercornTrace(5, 2000));
  ASSERT_TRUE(in.ok());
  const std::string path = TempPath("self.ucir");
  ASSERT_TRUE(Convert(**in, path).ok());
  auto out = OpenTraceFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto first = usercorn_test::OpenBytes(testing::GeneratedUsercornTrace(5, 2000));
  ExpectSameReplay(**first, **out);
}

TEST(UsercornTraceWriterTest, WhatUsercornCannotExpressIsUnsupported) {
  const std::string path = TempPath("unsupported.ucir");
  UsercornTraceWriter w(path);
  TraceHeader physical;
  physical.arch = &X86_64();
  physical.address_kind = AddressKind::kPhysical;
  EXPECT_TRUE(w.Begin(physical, {}, {}).IsUnsupported());

  TraceHeader header;
  header.arch = &X86_64();
  std::vector<std::pair<ThreadId, RegisterFile>> two;
  two.emplace_back(ThreadId(1), RegisterFile(X86_64()));
  two.emplace_back(ThreadId(2), RegisterFile(X86_64()));
  EXPECT_TRUE(UsercornTraceWriter(path).Begin(header, two, {}).IsUnsupported());

  UsercornTraceWriter ok(path);
  ASSERT_TRUE(ok.Begin(header, {}, {}).ok());
  Event e;
  e.thread = ThreadId(1);
  ASSERT_TRUE(ok.Append(e).ok());
  e.thread = ThreadId(2);
  EXPECT_TRUE(ok.Append(e).IsUnsupported());
  e.thread = ThreadId(1);
  e.flags = kEventClearsMemory;
  EXPECT_TRUE(ok.Append(e).IsUnsupported());
  EXPECT_FALSE(std::filesystem::exists(path));  // nothing committed
}

}  // namespace
}  // namespace backstep::core
