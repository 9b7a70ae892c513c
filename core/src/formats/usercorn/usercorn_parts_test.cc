// Parts of a UCIR file (usercorn_recording.h: CreateUsercornPart, Cut,
// Resume, AppendPart): a trace written as parts by several writers and
// joined by concatenation is, byte for byte, the file one writer writes
// when it cuts where the parts meet; the cuts change no event; a damaged
// part is refused, naming the file and the offset.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backstep/core/usercorn_recording.h"
#include "formats/usercorn/usercorn_test_util.h"

namespace backstep::core {
namespace {

constexpr std::uint16_t kUnicornRax = 35;
constexpr Address kCode = 0x400000, kData = 0x600000;
constexpr std::size_t kInstructions = 3000;

std::vector<std::uint8_t> Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Instructions [first, limit) of a loop of 2-byte instructions at kCode
// (a jump back every 16), each writing 96 pseudo-random bytes and rax: about
// 110 bytes of ops each that do not compress, so that a part holds several
// 64 KiB chunks. The last one exits.
void Write(UsercornRecordingWriter& w, std::size_t first, std::size_t limit) {
  std::vector<std::uint8_t> data(96);
  for (std::size_t i = first; i < limit; ++i) {
    std::uint64_t x = i * 0x9e3779b97f4a7c15u + 1;
    for (std::uint8_t& b : data) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      b = static_cast<std::uint8_t>(x);
    }
    const MemoryAccess write{kData + (i % 64) * 96, data};
    const UsercornRegisterValue rax{kUnicornRax, i};
    UsercornInstruction insn;
    insn.pc = kCode + 2 * (i % 16);
    insn.size = 2;
    insn.writes = {&write, 1};
    insn.registers = {&rax, 1};
    w.AppendInstruction(insn);
  }
  if (limit == kInstructions) w.AppendExit();
}

Status Begin(UsercornRecordingWriter& w) {
  UsercornMapping code, data;
  code.address = kCode;
  code.size = 0x1000;
  code.desc = code.file = "/prog";
  data.address = kData;
  data.size = 0x2000;
  data.desc = "[heap]";
  const UsercornMapping maps[] = {code, data};
  auto read = [](const UsercornMapping& m, std::vector<std::uint8_t>* out) {
    out->assign(m.size, m.address == kCode ? 0x90 : 0);
    return Status::Ok();
  };
  return w.Begin(0, {}, maps, read, kCode);
}

TEST(UsercornParts, JoinedPartsAreTheCutFileByteForByte) {
  const std::string dir = ::testing::TempDir() + "/ucir-parts-" + std::to_string(getpid());
  const std::string one = dir + ".one.ucir", uncut = dir + ".uncut.ucir",
                    joined = dir + ".joined.ucir";
  const std::size_t cuts[] = {0, 700, 701, 1999, kInstructions};
  // One writer, cut where the parts meet; and one without cuts.
  auto w = CreateUsercornRecording(one);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(Begin(**w).ok());
  for (std::size_t k = 0; k + 1 < std::size(cuts); ++k) {
    Write(**w, cuts[k], cuts[k + 1]);
    (*w)->Cut();
  }
  ASSERT_TRUE((*w)->Finish().ok());
  auto u = CreateUsercornRecording(uncut);
  ASSERT_TRUE(u.ok());
  ASSERT_TRUE(Begin(**u).ok());
  Write(**u, 0, kInstructions);
  ASSERT_TRUE((*u)->Finish().ok());
  // The parts, each by a writer of its own, joined.
  std::vector<std::string> parts;
  std::vector<std::uint64_t> sizes;
  for (std::size_t k = 0; k + 1 < std::size(cuts); ++k) {
    parts.push_back(dir + ".part" + std::to_string(k));
    auto p = CreateUsercornPart(parts.back(), k == 0);
    ASSERT_TRUE(p.ok());
    if (k == 0) {
      ASSERT_TRUE(Begin(**p).ok());
    } else {
      (*p)->Resume(kCode + 2 * ((cuts[k] - 1) % 16) + 2);  // the fall-through
    }
    Write(**p, cuts[k], cuts[k + 1]);
    ASSERT_TRUE((*p)->Finish().ok());
    sizes.push_back((*p)->bytes_written());
  }
  auto j = CreateUsercornRecording(joined);
  ASSERT_TRUE(j.ok());
  for (std::size_t k = 0; k < parts.size(); ++k) {
    ASSERT_TRUE((*j)->AppendPart(parts[k], sizes[k]).ok());
  }
  ASSERT_TRUE((*j)->Finish().ok());
  const std::vector<std::uint8_t> expected = Bytes(one);
  EXPECT_GT(expected.size(), 4u * 65536);
  EXPECT_TRUE(Bytes(joined) == expected);
  // The cuts changed the chunks, not the events.
  auto cut_reader = usercorn_test::OpenBytes(expected);
  auto uncut_reader = usercorn_test::OpenBytes(Bytes(uncut));
  ASSERT_TRUE(cut_reader.ok() && uncut_reader.ok());
  const std::vector<std::string> events = usercorn_test::ReadAll(**cut_reader);
  EXPECT_EQ(events.size(), kInstructions + 1);  // and the exit
  EXPECT_EQ(events, usercorn_test::ReadAll(**uncut_reader));

  // A part cut short, or not the size its writer reported: refused.
  ASSERT_EQ(truncate(parts[1].c_str(), static_cast<off_t>(sizes[1] - 1)), 0);
  auto damaged = CreateUsercornRecording(joined);
  ASSERT_TRUE(damaged.ok());
  ASSERT_TRUE((*damaged)->AppendPart(parts[0], sizes[0]).ok());
  Status s = (*damaged)->AppendPart(parts[1], sizes[1] - 1);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find(parts[1] + ": damaged part: no whole snappy chunk at offset "),
            std::string::npos)
      << s.message();
  s = (*damaged)->AppendPart(parts[1], sizes[1]);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("bytes, its writer wrote " + std::to_string(sizes[1])),
            std::string::npos)
      << s.message();
  for (const std::string& p : parts) std::remove(p.c_str());
  for (const std::string& p : {one, uncut, joined}) std::remove(p.c_str());
}

}  // namespace
}  // namespace backstep::core
