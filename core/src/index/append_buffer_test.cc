#include "index/append_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "index/index_format.h"

namespace backstep::core {
namespace {

// Short heads (the inlined copy) and long pieces, across many growths, give
// exactly the bytes appended, in order.
TEST(AppendBufferTest, HoldsExactlyTheBytesAppendedAcrossGrowths) {
  AppendBuffer buffer;
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_TRUE(buffer.bytes().empty());
  std::vector<std::uint8_t> expected;
  std::uint8_t head[kMaxEntryBytes];
  std::vector<std::uint8_t> piece(300);
  for (unsigned i = 0; i < 5000; ++i) {
    const std::size_t n = i % (sizeof(head) + 1);  // 0..52: both sides of 16
    for (std::size_t k = 0; k < sizeof(head); ++k) head[k] = static_cast<std::uint8_t>(i * 7 + k);
    buffer.AppendShort(head, n);
    expected.insert(expected.end(), head, head + n);
    if (i % 97 == 0) {
      piece.resize(i % 300);
      for (std::size_t k = 0; k < piece.size(); ++k) piece[k] = static_cast<std::uint8_t>(i + k);
      buffer.Append(piece.data(), piece.size());
      expected.insert(expected.end(), piece.begin(), piece.end());
    }
  }
  ASSERT_EQ(buffer.size(), expected.size());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), buffer.bytes().begin()));

  AppendBuffer moved(std::move(buffer));
  EXPECT_EQ(buffer.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  ASSERT_EQ(moved.size(), expected.size());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), moved.bytes().begin()));
  AppendBuffer assigned;
  assigned.AppendShort(head, 3);
  assigned = std::move(moved);
  ASSERT_EQ(assigned.size(), expected.size());
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), assigned.bytes().begin()));
}

}  // namespace
}  // namespace backstep::core
