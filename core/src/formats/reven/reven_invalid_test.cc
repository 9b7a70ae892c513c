// A table of invalid headers (ninja's style): each row changes one thing in
// an otherwise valid hand-built file and names the error it must produce.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>

#include "backstep/testing/reven_fixtures.h"
#include "formats/reven/reven_reader.h"

namespace backstep::core {
namespace {

using testing::RevenBytes;

struct Decl {
  std::uint16_t id, size;
  std::string name;
};
struct Op {
  std::uint16_t id, reg;  // id as u16 so that the table can write 0xff
  std::uint8_t op;
  std::uint16_t size;
};

// Every field of a minimal trace, valid by default.
struct Spec {
  std::uint64_t magic = 0x72766e62696e7273;
  std::uint32_t metadata_version = 1, type = 1;
  std::string format_version = "1.0.1";
  std::uint64_t format_length = 0;  // != 0: written instead of the real length
  std::uint64_t header_size = 1;
  std::uint8_t compression = 0;
  std::uint32_t arch = 0x31343678;
  std::uint8_t phy = 8;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> regions = {{0x1000, 16}};
  std::vector<Decl> registers = {{0, 8, "rax"}, {1, 8, "rip"}, {2, 2, "cs"}};
  std::vector<Op> ops = {{0x10, 1, 1, 8}};
  std::optional<std::uint32_t> region_count, register_count, op_count, static_count;
  std::optional<std::uint64_t> memory_bytes;  // default: Σ region sizes
  std::vector<std::uint16_t> initial = {0, 1, 2};
  std::optional<std::uint32_t> initial_count;
  std::uint64_t events_payload = 8;  // event_count only
};

std::vector<std::uint8_t> Build(const Spec& s) {
  RevenBytes b;
  b.U64(s.magic);
  if (s.magic != 0x7262696e72737263) b.U32(s.metadata_version);
  b.U32(s.type);
  b.U64(s.format_length ? s.format_length : s.format_version.size()).Str(s.format_version);
  b.Fill(512 - std::min<std::size_t>(512, s.format_version.size()));
  b.U64(5).Str("panda").Fill(507);
  b.U64(0).Fill(512);
  b.U64(0).Fill(2048);
  b.U64(0);
  b.U64(s.header_size);
  if (s.header_size != 0) b.U8(s.compression);
  const std::size_t machine = b.Begin();
  b.U32(s.arch).U8(s.phy);
  b.U32(s.region_count.value_or(s.regions.size()));
  for (auto [start, size] : s.regions) b.Le(start, s.phy).Le(size, s.phy);
  b.U32(s.register_count.value_or(s.registers.size()));
  for (const Decl& d : s.registers) b.U16(d.id).U16(d.size).Str8(d.name);
  b.U32(s.op_count.value_or(s.ops.size()));
  for (const Op& op : s.ops) b.U8(op.id).U16(op.reg).U8(op.op).Fill(op.size, 1);
  b.U32(s.static_count.value_or(0));
  b.End(machine);
  std::uint64_t total = 0;
  for (auto r : s.regions) total += r.second;
  const std::size_t memory = b.Begin();
  b.Fill(s.memory_bytes.value_or(total), 0xab);
  b.End(memory);
  const std::size_t initial = b.Begin();
  b.U32(s.initial_count.value_or(s.initial.size()));
  for (std::uint16_t id : s.initial) {
    b.U16(id);
    for (const Decl& d : s.registers) {
      if (d.id == id) b.Fill(d.size, 0);
    }
  }
  b.End(initial);
  b.U64(s.events_payload).Le(0, static_cast<int>(std::min<std::uint64_t>(8, s.events_payload)));
  return std::move(b.bytes());
}

struct Row {
  const char* name;
  std::function<void(Spec&)> change;
  StatusCode code;
  const char* message;  // a substring of the error
};

const Row kRows[] = {
    {"bad magic", [](Spec& s) { s.magic = 0x1234; }, StatusCode::kCorruption, "bad magic"},
    {"metadata version 2", [](Spec& s) { s.metadata_version = 2; }, StatusCode::kUnsupported,
     "metadata version 2"},
    {"cache, not trace", [](Spec& s) { s.type = 2; }, StatusCode::kUnsupported, "resource type 2"},
    {"other resource", [](Spec& s) { s.type = 7; }, StatusCode::kUnsupported, "resource type 7"},
    {"format 2.0", [](Spec& s) { s.format_version = "2.0.0"; }, StatusCode::kUnsupported,
     "format version"},
    {"string too long", [](Spec& s) { s.format_length = 1ull << 40; }, StatusCode::kCorruption,
     "exceeds its capacity"},
    {"empty header", [](Spec& s) { s.header_size = 0; }, StatusCode::kCorruption, "empty"},
    {"compression", [](Spec& s) { s.compression = 1; }, StatusCode::kUnsupported, "compression 1"},
    {"bad arch", [](Spec& s) { s.arch = 0x64636261; }, StatusCode::kCorruption,
     "unknown architecture magic"},
    {"arm64", [](Spec& s) { s.arch = 0x316d7261; }, StatusCode::kUnsupported,
     "arm64 REVEN traces are not supported yet"},
    {"phy 0", [](Spec& s) { s.phy = 0; }, StatusCode::kCorruption, "physical address size 0"},
    {"phy 9", [](Spec& s) { s.phy = 9; }, StatusCode::kCorruption, "physical address size 9"},
    {"duplicate name", [](Spec& s) { s.registers[1].name = "rax"; }, StatusCode::kCorruption,
     "\"rax\" declared twice"},
    {"duplicate id", [](Spec& s) { s.registers[1].id = 0; }, StatusCode::kCorruption,
     "id 0 declared twice"},
    {"register size 0", [](Spec& s) { s.registers[0].size = 0; }, StatusCode::kCorruption,
     "size 0"},
    {"op id 0xff", [](Spec& s) { s.ops[0].id = 0xff; }, StatusCode::kCorruption, "reserved"},
    {"op on undeclared", [](Spec& s) { s.ops[0].reg = 9; }, StatusCode::kCorruption,
     "undeclared register id 9"},
    {"op id is a register", [](Spec& s) { s.ops[0].id = 1; }, StatusCode::kCorruption,
     "also a register id"},
    {"duplicate op", [](Spec& s) { s.ops.push_back(s.ops[0]); }, StatusCode::kCorruption,
     "operation id 16 declared twice"},
    {"operator 4", [](Spec& s) { s.ops[0].op = 4; }, StatusCode::kCorruption, "unknown operator 4"},
    {"ADD on converted",
     [](Spec& s) {
       s.ops[0] = {0x10, 2, 1, 2};
     },
     StatusCode::kUnsupported, "(ADD) targets register \"cs\""},
    {"regions overlap",
     [](Spec& s) {
       s.regions.push_back({0x1008, 16});
     },
     StatusCode::kCorruption, "overlap"},
    {"region overflows",
     [](Spec& s) {
       s.regions = {{~0ull - 4, 16}};
       s.memory_bytes = 0;
     },
     StatusCode::kCorruption, "overflows"},
    {"memory mismatch", [](Spec& s) { s.memory_bytes = 15; }, StatusCode::kCorruption,
     "regions declare 16"},
    {"missing initial",
     [](Spec& s) {
       s.initial = {0, 1};
     },
     StatusCode::kCorruption, "\"cs\" (id 2) has no value"},
    {"initial twice",
     [](Spec& s) {
       s.initial = {0, 1, 2, 1};
     },
     StatusCode::kCorruption, "appears twice"},
    {"initial op",
     [](Spec& s) {
       s.initial = {0, 1, 2, 0x10};
     },
     StatusCode::kCorruption, "operation id 16"},
    {"initial undeclared",
     [](Spec& s) {
       s.initial = {0, 1, 2, 7};
     },
     StatusCode::kCorruption, "undeclared register id 7"},
    // Absurd counts: must fail before allocating anything of that size.
    {"region count", [](Spec& s) { s.region_count = 0xffffffff; }, StatusCode::kCorruption,
     "cannot fit"},
    {"register count", [](Spec& s) { s.register_count = 0xfffffff0; }, StatusCode::kCorruption,
     "cannot fit"},
    {"op count", [](Spec& s) { s.op_count = 0x7fffffff; }, StatusCode::kCorruption, "cannot fit"},
    {"static count", [](Spec& s) { s.static_count = 0xffffffff; }, StatusCode::kCorruption,
     "cannot fit"},
    {"initial count", [](Spec& s) { s.initial_count = 0xffffffff; }, StatusCode::kCorruption,
     "cannot fit"},
    {"huge region",
     [](Spec& s) {
       s.regions = {{0, 1ull << 62}};
       s.memory_bytes = 0;
     },
     StatusCode::kCorruption, "regions declare"},
    {"events too short", [](Spec& s) { s.events_payload = 4; }, StatusCode::kCorruption,
     "too short for its event count"},
};

TEST(RevenInvalidTest, BaselineIsValid) {
  auto r = RevenReader::Open(MemorySource(Build(Spec()), "bad.bin"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Event e;
  auto more = (*r)->Next(&e);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
}

TEST(RevenInvalidTest, EveryRowFailsWithItsMessage) {
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.name);
    Spec spec;
    row.change(spec);
    const auto start = std::chrono::steady_clock::now();
    auto r = RevenReader::Open(MemorySource(Build(spec), "bad.bin"));
    ASSERT_FALSE(r.ok());
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    const Status& s = r.status();
    EXPECT_EQ(s.code(), row.code) << s.ToString();
    EXPECT_NE(s.message().find(row.message), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("bad.bin: "), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find(" at offset 0x"), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace backstep::core
