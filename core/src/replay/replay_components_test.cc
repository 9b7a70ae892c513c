// The ReplayCursor's components on their own: PageCache's second-read rule
// and LRU eviction, UndoJournal's register undo and write restoring.
// (The cursor as a whole: replay_cursor_test.cc's cross-checks.)
#include <cstring>
#include <vector>

#include "backstep/core/arch.h"
#include "gtest/gtest.h"
#include "replay/page_cache.h"
#include "replay/undo_journal.h"

namespace backstep::core {
namespace {

TEST(PageCache, CachesAPageOnItsSecondReadSinceTheLastDrop) {
  PageCache cache;
  EXPECT_FALSE(cache.ShouldCache(0x1000));  // first read: remembered only
  EXPECT_TRUE(cache.ShouldCache(0x1000));   // second read: cache it
  EXPECT_FALSE(cache.ShouldCache(0x2000));
  cache.Drop();
  EXPECT_FALSE(cache.ShouldCache(0x1000));  // the drop forgot the first read
}

TEST(PageCache, EvictsTheLeastRecentlyUsedPage) {
  PageCache cache;
  for (std::size_t i = 0; i < PageCache::kPages; ++i) {
    cache.Commit(cache.Claim(), i * kPageSize);
  }
  for (std::size_t i = 0; i < PageCache::kPages; ++i) ASSERT_NE(cache.Find(i * kPageSize), nullptr);
  cache.Touch(cache.Find(0));  // page 1 is now the least recently used
  PageCache::Page* slot = cache.Claim();
  EXPECT_EQ(slot, cache.Find(kPageSize));
  cache.Commit(slot, 100 * kPageSize);
  EXPECT_EQ(cache.Find(kPageSize), nullptr);
  EXPECT_NE(cache.Find(0), nullptr);
  EXPECT_EQ(cache.Find(100 * kPageSize), slot);
  cache.Drop();
  EXPECT_EQ(cache.Find(0), nullptr);
}

RegisterWrite SetTo(RegisterId reg, std::uint64_t value) {
  RegisterWrite w;
  w.reg = reg;
  std::memcpy(w.value, &value, sizeof value);
  return w;
}

TEST(UndoJournal, UndoRestoresRegistersAndTheBytesWritesOverwrote) {
  const ArchDescription& arch = X86_64();
  const RegisterId rax = *arch.Find("rax"), rbx = *arch.Find("rbx");
  std::vector<RegisterFile> regs(1, RegisterFile(arch));
  regs[0].SetU64(rax, 1);
  UndoJournal journal;
  journal.Clear(10);

  // Event 10: rax = 2, rbx = 3 (rbx unknown before), and a 2-byte write to
  // a cached page whose bytes were 0xaa 0xbb (known).
  std::vector<std::uint8_t> page(2 * kPageSize, 0);
  page[0x10] = 0xaa;
  page[0x11] = 0xbb;
  page[kPageSize + 0x10] = page[kPageSize + 0x11] = 1;
  Event event;
  event.registers = {SetTo(rax, 2), SetTo(rbx, 3)};
  journal.Begin(ReaderPosition{123, 4}, false);
  const std::uint8_t data[] = {0x01, 0x02};
  journal.RecordWrite(0x5010, data, page.data() + 0x10);
  journal.ApplyRegisters(0, regs[0], event, arch);
  ASSERT_EQ(journal.size(), 1u);
  EXPECT_EQ(regs[0].u64(rax), 2u);
  EXPECT_EQ(regs[0].u64(rbx), 3u);

  std::vector<std::uint8_t> restored;
  Address restored_at = 0;
  const UndoJournal::Entry undone = journal.UndoLast(
      regs, arch, [&](Address address, std::uint32_t size, const std::uint8_t* old) {
        ASSERT_NE(old, nullptr);
        restored_at = address;
        restored.assign(old, old + 2 * size);  // values, then known flags
      });
  EXPECT_EQ(undone.reader_position, (ReaderPosition{123, 4}));
  EXPECT_EQ(journal.size(), 0u);
  EXPECT_EQ(regs[0].u64(rax), 1u);
  EXPECT_FALSE(regs[0].known(rbx));
  EXPECT_EQ(restored_at, 0x5010u);
  EXPECT_EQ(restored, (std::vector<std::uint8_t>{0xaa, 0xbb, 1, 1}));
}

TEST(UndoJournal, APageBroughtForwardKeepsTheBytesOfEveryJournaledWrite) {
  UndoJournal journal;
  journal.Clear(0);
  const std::uint8_t first[] = {0x11}, second[] = {0x22};
  Event none;
  std::vector<RegisterFile> regs(1, RegisterFile(X86_64()));
  journal.Begin({}, false);
  journal.RecordWrite(0x3004, first, nullptr);  // page 0x3000 not cached yet
  journal.ApplyRegisters(0, regs[0], none, X86_64());
  journal.Begin({}, false);
  journal.RecordWrite(0x3004, second, nullptr);
  journal.ApplyRegisters(0, regs[0], none, X86_64());
  EXPECT_EQ(journal.PageReadPosition(), 0u);

  // The page as the index has it at position 0: byte 4 unknown.
  std::vector<std::uint8_t> values(kPageSize, 0), known(kPageSize, 0);
  journal.BringPageForward(0x3000, values, known);
  EXPECT_EQ(values[4], 0x22);
  EXPECT_EQ(known[4], 1);

  std::vector<std::vector<std::uint8_t>> olds;
  for (int i = 0; i < 2; ++i) {
    journal.UndoLast(regs, X86_64(), [&](Address, std::uint32_t size, const std::uint8_t* old) {
      ASSERT_NE(old, nullptr);
      olds.emplace_back(old, old + 2 * size);
    });
  }
  // Undoing the second write gives back the first one's byte, undoing the
  // first the unknown byte of position 0.
  EXPECT_EQ(olds, (std::vector<std::vector<std::uint8_t>>{{0x11, 1}, {0x00, 0}}));
}

}  // namespace
}  // namespace backstep::core
