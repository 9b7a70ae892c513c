// The ptrace engine records the reads of AVX2 gathers (VSIB addressing:
// insn_decoder.h, Decoded::Gather): one read per enabled lane, at base +
// index[lane] * scale, none for the lanes whose mask is clear.
//
// tests/programs/gathers.c gathers from three tables with vpgatherdd,
// vpgatherqq and vpgatherqd, some lanes masked off, and prints the tables'
// addresses and what it gathered. Nothing else reads the tables: exactly one
// step must read each, and its reads in the table must be the enabled lanes'
// elements.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "recorder/record_output_test_util.h"
#include "recorder/recorder.h"

namespace backstep::record {
namespace {

// Every step's reads, by step.
struct ReadsSink : RecordingSink {
  core::Status OnStart(const StartInfo&) override { return core::Status::Ok(); }
  void OnInstruction(const InstructionRecord& insn) override {
    std::vector<std::pair<core::Address, std::uint64_t>> r;
    for (const core::MemoryAccess& a : insn.reads) r.emplace_back(a.address, a.data.size());
    steps.push_back(std::move(r));
  }
  void OnSyscall(const SyscallRecord&) override {}
  core::Status Finish(bool) override { return core::Status::Ok(); }
  std::vector<std::vector<std::pair<core::Address, std::uint64_t>>> steps;
};

struct GatherCase {
  const char* name;
  std::uint64_t element_size;
  std::vector<std::uint64_t> indices;
  std::vector<bool> enabled;
  const char* printed;  // the lanes gathered (-7: a masked-off lane's old value)
};

class GatherReads : public ::testing::TestWithParam<const char*> {};

TEST_P(GatherReads, EnabledLanesAreRead) {
  const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + GetParam();
  const std::string out = ::testing::TempDir() + "/gathers.out";
  ReadsSink sink;
  RecordResult result;
  core::Expected<std::vector<std::string>> printed =
      test_util::RecordedProgramsLines(program, sink, out, &result);
  ASSERT_TRUE(printed.ok()) << printed.status().message();
  EXPECT_EQ(result.unbounded_reads, 0u);
  const std::vector<std::string>& lines = *printed;
  ASSERT_FALSE(lines.empty());
  unsigned long long tables[3] = {};
  ASSERT_EQ(std::sscanf(lines[0].c_str(), "table32 %llx table64 %llx table_qd %llx", &tables[0],
                        &tables[1], &tables[2]),
            3)
      << lines[0];
  if (lines.size() > 1 && lines[1] == "no avx2") {
    std::fprintf(stderr, "\n*** SKIPPED: this CPU has no AVX2: no gathers to record ***\n\n");
    GTEST_SKIP() << "no AVX2 on this CPU";
  }
  const GatherCase cases[] = {
      {"dd",
       4,
       {3, 17, 40, 9, 55, 1, 28, 62},
       {true, true, false, true, true, false, true, true},
       "dd 1003 1017 -7 1009 1055 -7 1028 1062"},
      {"qq", 8, {5, 33, 60, 12}, {true, false, true, true}, "qq 2005 -7 2060 2012"},
      {"qd", 4, {7, 21, 50, 2}, {true, true, true, false}, "qd 3007 3021 3050 -7"},
  };
  ASSERT_EQ(lines.size(), 4u);
  for (int t = 0; t < 3; ++t) {
    const GatherCase& c = cases[t];
    SCOPED_TRACE(c.name);
    EXPECT_EQ(lines[t + 1], c.printed);
    const std::uint64_t start = tables[t], end = start + 64 * c.element_size;
    std::set<std::pair<core::Address, std::uint64_t>> expected;
    for (std::size_t lane = 0; lane < c.indices.size(); ++lane) {
      if (c.enabled[lane])
        expected.emplace(start + c.indices[lane] * c.element_size, c.element_size);
    }
    std::vector<std::set<std::pair<core::Address, std::uint64_t>>> readers;
    for (const auto& step : sink.steps) {
      std::set<std::pair<core::Address, std::uint64_t>> in_table;
      for (const auto& [address, size] : step) {
        if (address < end && address + size > start) in_table.emplace(address, size);
      }
      if (!in_table.empty()) readers.push_back(std::move(in_table));
    }
    ASSERT_EQ(readers.size(), 1u) << "steps that read the table (only the gather does)";
    EXPECT_EQ(readers[0], expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, GatherReads,
                         ::testing::Values("gathers_O0_static", "gathers_O2_static"));

}  // namespace
}  // namespace backstep::record
