// Full register records' bodies (index format v10): zero words left out,
// read back exactly, and a damaged body refused instead of read past.
#include "index/full_register_record.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backstep/core/arch.h"
#include "backstep/core/register_file.h"

namespace backstep::core {
namespace {

std::vector<std::uint8_t> Body(const RegisterFile& regs, std::uint32_t* count) {
  std::vector<std::uint64_t> words;
  *count = EncodeFullRecordStorage(regs.raw_storage(), words);
  words.insert(words.end(), regs.raw_known().begin(), regs.raw_known().end());
  std::vector<std::uint8_t> body(8 * words.size());
  std::memcpy(body.data(), words.data(), body.size());
  return body;
}

TEST(FullRegisterRecordTest, LeavesOutZeroWordsAndReadsBackTheStorage) {
  RegisterFile regs(X86_64());
  const std::size_t storage = regs.raw_storage().size();
  std::uint32_t count = 0;
  EXPECT_EQ(Body(regs, &count).size(),
            8 * (FullRecordBitmapWords(storage) + regs.raw_known().size()));
  EXPECT_EQ(count, 0u);

  regs.SetU64(X86_64().pc(), 0x401000);
  regs.SetU64(X86_64().sp(), 0x7ffe0000ff00);
  const std::vector<std::uint8_t> body = Body(regs, &count);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(body.size(), 8 * (FullRecordBitmapWords(storage) + 2 + regs.raw_known().size()));

  std::vector<std::uint8_t> back(storage, 0xaa);
  const std::uint8_t* known = nullptr;
  ASSERT_TRUE(DecodeFullRecordStorage(body.data(), body.size(), count, regs.raw_known().size(),
                                      back, &known));
  EXPECT_TRUE(std::equal(back.begin(), back.end(), regs.raw_storage().begin()));
  EXPECT_EQ(0, std::memcmp(known, regs.raw_known().data(), 8 * regs.raw_known().size()));
}

TEST(FullRegisterRecordTest, TheLastPartialWordKeepsItsBytes) {
  // x86-64's storage (3314 bytes) ends inside a word: set its last byte.
  RegisterFile regs(X86_64());
  std::vector<std::uint8_t> storage(regs.raw_storage().begin(), regs.raw_storage().end());
  ASSERT_NE(storage.size() % 8, 0u);
  storage.back() = 0x5c;
  std::vector<std::uint64_t> words;
  ASSERT_EQ(EncodeFullRecordStorage(storage, words), 1u);
  std::vector<std::uint8_t> back(storage.size(), 0xaa);
  const std::uint8_t* known = nullptr;
  ASSERT_TRUE(DecodeFullRecordStorage(reinterpret_cast<const std::uint8_t*>(words.data()),
                                      8 * words.size(), 1, 0, back, &known));
  EXPECT_EQ(back, storage);
}

TEST(FullRegisterRecordTest, RefusesBodiesThatDoNotAddUp) {
  RegisterFile regs(X86_64());
  regs.SetU64(X86_64().pc(), 0x401000);
  std::uint32_t count = 0;
  std::vector<std::uint8_t> body = Body(regs, &count);
  const std::size_t known_words = regs.raw_known().size();
  std::vector<std::uint8_t> back(regs.raw_storage().size());
  const std::uint8_t* known = nullptr;
  ASSERT_TRUE(DecodeFullRecordStorage(body.data(), body.size(), count, known_words, back, &known));
  // The header names fewer words than the bitmap sets (the body would hold
  // them).
  ASSERT_EQ(count, 1u);
  EXPECT_FALSE(
      DecodeFullRecordStorage(body.data(), body.size(), count - 1, known_words, back, &known));
  // More words than the body holds.
  EXPECT_FALSE(
      DecodeFullRecordStorage(body.data(), body.size(), count + 1, known_words, back, &known));
  // The body is cut short of its known words.
  EXPECT_FALSE(
      DecodeFullRecordStorage(body.data(), body.size() - 8, count, known_words, back, &known));
  // A bit past the storage's words.
  const std::size_t last = FullRecordBitmapWords(back.size()) - 1;
  body[8 * last + 7] |= 0x80;
  EXPECT_FALSE(
      DecodeFullRecordStorage(body.data(), body.size(), count + 1, known_words, back, &known));
}

}  // namespace
}  // namespace backstep::core
