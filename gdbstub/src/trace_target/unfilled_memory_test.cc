#include "trace_target/unfilled_memory.h"

#include <gtest/gtest.h>

namespace backstep::gdbstub {
namespace {

TEST(FillUnfilledMappings, ZeroesOnlyUnknownBytesOfUnfilledMappings) {
  std::vector<core::Mapping> maps = {
      {0x1000, 0x1000, "rw-", 0, "", false},  // zero-filled by the trace: left alone
      {0x2000, 0x2000, "rw-", 0, "", true},   // unfilled, e.g. a thread stack
  };
  // 0x1ffe..0x2003 and beyond the mapping's end at 0x4000 (not tested here).
  std::vector<std::uint8_t> out = {0xaa, 0xaa, 0xaa, 0x55, 0xaa, 0xaa};
  std::vector<std::uint8_t> known = {0, 0, 0, 1, 0, 0};
  FillUnfilledMappings(maps, 0x1ffe, out, known);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{0xaa, 0xaa, 0, 0x55, 0, 0}));
  EXPECT_EQ(known, (std::vector<std::uint8_t>{0, 0, 1, 1, 1, 1}));
}

TEST(FillUnfilledMappings, StopsAtTheMappingsEndAndTheTopOfMemory) {
  std::vector<core::Mapping> maps = {{0xfffffffffffff000, 0x1000, "rw-", 0, "", true}};
  std::vector<std::uint8_t> out(4, 0xaa), known(4, 0);
  FillUnfilledMappings(maps, 0xffffffffffffeffe, out, known);
  EXPECT_EQ(known, (std::vector<std::uint8_t>{0, 0, 1, 1}));
  std::vector<std::uint8_t> top(2, 0xaa), top_known(2, 0);
  FillUnfilledMappings(maps, 0xfffffffffffffffe, top, top_known);
  EXPECT_EQ(top_known, (std::vector<std::uint8_t>{1, 1}));
  std::vector<std::uint8_t> none(2, 0xaa), none_known(2, 0);
  FillUnfilledMappings({}, 0x1000, none, none_known);
  EXPECT_EQ(none_known, (std::vector<std::uint8_t>{0, 0}));
}

}  // namespace
}  // namespace backstep::gdbstub
