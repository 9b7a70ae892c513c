// The ptrace engine records the reads of AVX-512 masked loads (EVEX with an
// opmask: insn_decoder.h, Decoded::MaskedRead) as the enabled elements
// only: the CPU neither reads nor faults on the others.
//
// tests/programs/masked_loads.c loads a page's last 3 bytes with vmovdqu8
// under mask 0x7, the 61 masked-off bytes lying in the unmapped page after
// it, and 8 ints with vmovdqu32 under mask 0x5. Nothing else reads the two
// buffers: exactly one step must read each, and its reads there must be the
// enabled elements.
#include <gtest/gtest.h>

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

using ReadSet = std::set<std::pair<core::Address, std::uint64_t>>;

// Every step's reads, by step.
struct ReadsSink : RecordingSink {
  core::Status OnStart(const StartInfo&) override { return core::Status::Ok(); }
  void OnInstruction(const InstructionRecord& insn) override {
    ReadSet r;
    for (const core::MemoryAccess& a : insn.reads) r.emplace(a.address, a.data.size());
    steps.push_back(std::move(r));
  }
  void OnSyscall(const SyscallRecord&) override {}
  core::Status Finish(bool) override { return core::Status::Ok(); }
  // The reads inside [start, end) of each step that made any there.
  std::vector<ReadSet> ReadersOf(core::Address start, core::Address end) const {
    std::vector<ReadSet> out;
    for (const ReadSet& step : steps) {
      ReadSet inside;
      for (const auto& [address, size] : step)
        if (address < end && address + size > start) inside.emplace(address, size);
      if (!inside.empty()) out.push_back(std::move(inside));
    }
    return out;
  }
  std::vector<ReadSet> steps;
};

class MaskedReads : public ::testing::TestWithParam<const char*> {};

TEST_P(MaskedReads, EnabledElementsAreRead) {
  const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + GetParam();
  const std::string out = ::testing::TempDir() + "/masked_loads.out";
  ReadsSink sink;
  core::Expected<std::vector<std::string>> printed =
      test_util::RecordedProgramsLines(program, sink, out);
  ASSERT_TRUE(printed.ok()) << printed.status().message();
  const std::vector<std::string>& lines = *printed;
  ASSERT_FALSE(lines.empty());
  unsigned long long tail = 0, ints = 0;
  ASSERT_EQ(std::sscanf(lines[0].c_str(), "tail %llx ints %llx", &tail, &ints), 2) << lines[0];
  if (lines.size() > 1 && lines[1] == "no avx512") {
    std::fprintf(stderr, "\n*** SKIPPED: this CPU has no AVX-512 BW/VL: no masked loads ***\n\n");
    GTEST_SKIP() << "no AVX-512 BW/VL on this CPU";
  }
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "bytes 11 12 13 0");
  EXPECT_EQ(lines[2], "lanes 100 -7 102 -7 -7 -7 -7 -7");
  // The tail's 3 bytes, none of the unmapped page after them.
  const std::vector<ReadSet> tail_readers = sink.ReadersOf(tail, tail + 3 + 4096);
  ASSERT_EQ(tail_readers.size(), 1u) << "steps that read the page's tail (only the load does)";
  EXPECT_EQ(tail_readers[0], (ReadSet{{tail, 3}}));
  const std::vector<ReadSet> int_readers = sink.ReadersOf(ints, ints + 32);
  ASSERT_EQ(int_readers.size(), 1u) << "steps that read the ints (only the load does)";
  EXPECT_EQ(int_readers[0], (ReadSet{{ints, 4}, {ints + 8, 4}}));
}

INSTANTIATE_TEST_SUITE_P(Programs, MaskedReads,
                         ::testing::Values("masked_loads_O0_static", "masked_loads_O2_static"));

}  // namespace
}  // namespace backstep::record
