#include "packets/libraries_svr4.h"

#include <gtest/gtest.h>

#include <cstring>

#include "testing/fake_target.h"

namespace backstep::gdbstub {
namespace {

// A dynamically linked program laid out by hand in FakeTarget's memory:
// program headers at 0x555555554040 (PT_PHDR at p_vaddr 0x40, PT_DYNAMIC
// at 0x3de0: a PIE loaded at 0x555555554000), DT_DEBUG -> r_debug, and a
// link map: the executable (no name), libc, then ld.so.
constexpr core::Address kBias = 0x555555554000, kPhdr = kBias + 0x40, kDynamic = kBias + 0x3de0;
constexpr core::Address kRDebug = 0x7ffff7ffe118, kMap = 0x7ffff7ff0000;
constexpr core::Address kMainLm = kMap, kLibcLm = kMap + 0x100, kLdLm = kMap + 0x200;

void Put(std::vector<std::uint8_t>& bytes, std::size_t offset, std::uint64_t value, int size) {
  if (bytes.size() < offset + size) bytes.resize(offset + size);
  for (int i = 0; i < size; ++i) bytes[offset + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

class LibrariesSvr4Test : public ::testing::Test {
 protected:
  void SetUp() override {
    target.auxv_bytes.clear();  // FakeTarget's own has no AT_PHDR
    for (auto [type, value] : {std::pair<std::uint64_t, std::uint64_t>{3, kPhdr},
                               {4, 56},
                               {5, 2},
                               {7, 0x7ffff7fca000},
                               {0, 0}}) {
      Put(target.auxv_bytes, target.auxv_bytes.size(), type, 8);
      Put(target.auxv_bytes, target.auxv_bytes.size(), value, 8);
    }
    std::vector<std::uint8_t> headers;
    Put(headers, 0, 6, 4);             // PT_PHDR
    Put(headers, 16, 0x40, 8);         // p_vaddr
    Put(headers, 56, 2, 4);            // PT_DYNAMIC
    Put(headers, 56 + 16, 0x3de0, 8);  // p_vaddr
    headers.resize(2 * 56);
    target.memory[kPhdr] = headers;
    std::vector<std::uint8_t> dynamic;
    Put(dynamic, 0, 1, 8);  // DT_NEEDED
    Put(dynamic, 8, 0x56, 8);
    Put(dynamic, 16, 21, 8);  // DT_DEBUG
    Put(dynamic, 24, debug_base, 8);
    Put(dynamic, 32, 0, 8);  // DT_NULL: d_tag 0
    Put(dynamic, 40, 0, 8);  // d_val 0
    target.memory[kDynamic] = dynamic;
    std::vector<std::uint8_t> r_debug;
    Put(r_debug, 0, 1, 4);
    Put(r_debug, 8, kMainLm, 8);
    target.memory[kRDebug] = r_debug;
    std::vector<std::uint8_t> map;
    // {l_addr, l_name, l_ld, l_next, l_prev} at kMap + 0x100 * i; names at
    // kMap + 0x80 + 0x100 * i.
    Entry(map, 0, kBias, kDynamic, kLibcLm, 0, "");
    Entry(map, 1, 0x7ffff7dd3000, 0x7ffff7fb0000, kLdLm, kMainLm,
          "/lib/x86_64-linux-gnu/libc.so.6");
    Entry(map, 2, 0x7ffff7fca000, 0x7ffff7ffce80, 0, kLibcLm, "/lib64/ld-linux-x86-64.so.2");
    target.memory[kMap] = map;
  }

  // The executable's entry has no name (l_name 0).
  static void Entry(std::vector<std::uint8_t>& map, int i, std::uint64_t l_addr, std::uint64_t l_ld,
                    std::uint64_t l_next, std::uint64_t l_prev, const char* name) {
    std::size_t base = 0x100 * i;
    Put(map, base, l_addr, 8);
    Put(map, base + 8, *name != 0 ? kMap + base + 0x80 : 0, 8);
    Put(map, base + 16, l_ld, 8);
    Put(map, base + 24, l_next, 8);
    Put(map, base + 32, l_prev, 8);
    map.resize(base + 0x100);
    std::memcpy(map.data() + base + 0x80, name, std::strlen(name) + 1);
  }

  core::Address debug_base = kRDebug;
  FakeTarget target;
};

TEST_F(LibrariesSvr4Test, WalksTheLinkMapAsGdbserverDoes) {
  ASSERT_TRUE(CanListLibrariesSvr4(target));
  auto list = ReadSvr4LibraryList(target, Svr4Names::kLinkMap);
  ASSERT_TRUE(list);
  EXPECT_EQ(Svr4LibraryListXml(*list),
            "<library-list-svr4 version=\"1.0\" main-lm=\"0x7ffff7ff0000\">"
            "<library name=\"/lib/x86_64-linux-gnu/libc.so.6\" lm=\"0x7ffff7ff0100\" "
            "l_addr=\"0x7ffff7dd3000\" l_ld=\"0x7ffff7fb0000\" lmid=\"0x0\"/>"
            "<library name=\"/lib64/ld-linux-x86-64.so.2\" lm=\"0x7ffff7ff0200\" "
            "l_addr=\"0x7ffff7fca000\" l_ld=\"0x7ffff7ffce80\" lmid=\"0x0\"/>"
            "</library-list-svr4>");
}

TEST_F(LibrariesSvr4Test, EmptyBeforeTheDynamicLinkerSetsDtDebug) {
  Put(target.memory[kDynamic], 24, 0, 8);
  auto list = ReadSvr4LibraryList(target, Svr4Names::kLinkMap);
  ASSERT_TRUE(list);
  EXPECT_EQ(Svr4LibraryListXml(*list), "<library-list-svr4 version=\"1.0\"/>");
}

TEST_F(LibrariesSvr4Test, StopsAtABrokenBackLink) {
  Put(target.memory[kMap], 0x200 + 32, 0x1234, 8);  // ld.so's l_prev
  auto list = ReadSvr4LibraryList(target, Svr4Names::kLinkMap);
  ASSERT_TRUE(list);
  ASSERT_EQ(list->libraries.size(), 1u);
  EXPECT_EQ(list->libraries[0].name, "/lib/x86_64-linux-gnu/libc.so.6");
}

TEST_F(LibrariesSvr4Test, ACycleIsBounded) {
  // l_next of ld.so back to the executable whose l_prev is 0: the back
  // link check ends it at once.
  Put(target.memory[kMap], 0x200 + 24, kMainLm, 8);
  auto list = ReadSvr4LibraryList(target, Svr4Names::kLinkMap);
  ASSERT_TRUE(list);
  EXPECT_EQ(list->libraries.size(), 2u);
}

TEST_F(LibrariesSvr4Test, StaticProgramsCannotAnswer) {
  target.memory[kPhdr][0] = 1;  // PT_LOAD instead of PT_PHDR
  EXPECT_FALSE(CanListLibrariesSvr4(target));
  EXPECT_FALSE(ReadSvr4LibraryList(target, Svr4Names::kLinkMap));
  target.auxv_bytes.clear();
  EXPECT_FALSE(CanListLibrariesSvr4(target));
}

}  // namespace
}  // namespace backstep::gdbstub
