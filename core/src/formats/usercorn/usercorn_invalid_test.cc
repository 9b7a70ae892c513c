// Tables of invalid inputs (ninja's style): each row changes one thing in an
// otherwise valid hand-built file and names the error it must produce, at
// open (header, stream identifier, keyframe) or from Next() (op stream).
#include <gtest/gtest.h>

#include <functional>

#include "formats/usercorn/usercorn_test_util.h"
#include "testing/usercorn_fixtures.h"

namespace backstep::core {
namespace {

using testing::UcirBytes;
using testing::UcirFileSpec;
using usercorn_test::OpenBytes;
using usercorn_test::ReadAll;

std::vector<std::uint8_t> ValidOps() {
  UcirBytes b;
  b.U8(2).U64(0).U32(2);                                              // KEYFRAME, 2 ops
  b.U8(5).U16(35).U64(7);                                             //   REG rax
  b.U8(9).U64(0x1000).U64(0x1000).U8(7).U64(0).U64(0).U16(0).U16(0);  //   MEM_MAP
  b.U8(1).U64(0).U32(2).U8(3).U64(0x1000).U32(4).U8(4).U8(4);         // FRAME: JMP, STEP
  return std::move(b.bytes());
}

struct HeaderCase {
  std::string name;
  std::function<void(std::vector<std::uint8_t>&)> damage;  // of the whole file
  StatusCode code;
  std::string message;
};

std::vector<std::uint8_t> ValidFile(const UcirFileSpec& spec = {}) {
  return testing::HandUcirFile(ValidOps(), spec);
}

void SetName(std::vector<std::uint8_t>& f, std::size_t at, std::string_view name) {
  std::fill(f.begin() + at, f.begin() + at + 32, 0);
  std::copy(name.begin(), name.end(), f.begin() + at);
}

TEST(UsercornInvalidTest, ValidFileOpens) {
  auto r = OpenBytes(ValidFile());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadAll(**r), std::vector<std::string>{"instruction t1 rip+=0x4"});
  // Version 0 (PROTOCOL.md's value) is read too.
  UcirFileSpec v0;
  v0.version = 0;
  EXPECT_TRUE(OpenBytes(ValidFile(v0)).ok());
}

TEST(UsercornInvalidTest, HeaderTable) {
  using V = std::vector<std::uint8_t>&;
  const std::vector<HeaderCase> cases = {
      {"empty", [](V f) { f.clear(); }, StatusCode::kCorruption, "file holds 0 bytes"},
      {"short", [](V f) { f.resize(73); }, StatusCode::kCorruption, "needs 74"},
      {"magic", [](V f) { f[3] = 'X'; }, StatusCode::kCorruption, "is not \"UCIR\""},
      {"version 2", [](V f) { f[7] = 2; }, StatusCode::kUnsupported, "UCIR version 2"},
      // A little-endian 1 is 16777216 big-endian.
      {"version LE", [](V f) { f[4] = 1, f[7] = 0; }, StatusCode::kUnsupported, "version 16777216"},
      {"sparc", [](V f) { SetName(f, 8, "sparc"); }, StatusCode::kUnsupported,
       "architecture 'sparc' is not supported yet"},
      {"arm", [](V f) { SetName(f, 8, "arm"); }, StatusCode::kUnsupported, "'arm'"},
      {"arm64", [](V f) { SetName(f, 8, "arm64"); }, StatusCode::kUnsupported, "'arm64'"},
      {"mips", [](V f) { SetName(f, 8, "mips"); }, StatusCode::kUnsupported, "'mips'"},
      {"unknown arch", [](V f) { SetName(f, 8, "vax"); }, StatusCode::kUnsupported,
       "'vax' is not supported (backstep"},
      {"empty arch", [](V f) { SetName(f, 8, ""); }, StatusCode::kCorruption,
       "architecture is not a NUL-padded name"},
      {"arch garbage after NUL", [](V f) { f[8 + 20] = 'x'; }, StatusCode::kCorruption,
       "at offset 0x8: the architecture"},
      {"arch not printable", [](V f) { f[9] = 0x07; }, StatusCode::kCorruption, "the architecture"},
      {"arch unterminated", [](V f) { std::fill(f.begin() + 8, f.begin() + 40, 'a'); },
       StatusCode::kUnsupported, "'aaaaaaaa"},
      {"os garbage", [](V f) { f[40 + 31] = 1; }, StatusCode::kCorruption, "offset 0x28: the OS"},
      {"code order 2", [](V f) { f[72] = 2; }, StatusCode::kCorruption, "byte orders 2/0"},
      {"data order 9", [](V f) { f[73] = 9; }, StatusCode::kCorruption, "byte orders 0/9"},
      {"big endian", [](V f) { f[72] = f[73] = 1; }, StatusCode::kUnsupported, "big-endian x86_64"},
      {"no identifier", [](V f) { f[74] = 0x01; }, StatusCode::kCorruption,
       "expected the stream identifier"},
      {"cut identifier", [](V f) { f.resize(80); }, StatusCode::kCorruption, "(file ends)"},
      {"bad CRC", [](V f) { f[88] ^= 0x80; }, StatusCode::kCorruption, "CRC mismatch"},
      {"cut first chunk", [](V f) { f.resize(90); }, StatusCode::kCorruption,
       "before the keyframe"},
  };
  for (const HeaderCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::uint8_t> f = ValidFile();
    c.damage(f);
    auto r = OpenBytes(f, "bad.ucir");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().ToString();
    EXPECT_EQ(r.status().message().rfind("bad.ucir: ", 0), 0u) << r.status().ToString();
  }
}

struct StreamCase {
  std::string name;
  std::function<void(UcirBytes&)> ops;  // after a valid keyframe (pid 0, no ops)
  bool at_open;                         // fails in Open() (keyframe) rather than Next()
  StatusCode code;
  std::string message;
};

TEST(UsercornInvalidTest, OpStreamTable) {
  const std::uint8_t eight[8] = {};
  const std::vector<StreamCase> cases = {
      {"keyframe cut", [](UcirBytes& b) { b.U8(2).U64(0).U32(5).U8(0).U8(0); }, true,
       StatusCode::kCorruption, "the data ends after 2 of its 5 ops"},
      {"STEP in keyframe", [](UcirBytes& b) { b.U8(2).U64(0).U32(1).U8(4).U8(1); }, true,
       StatusCode::kCorruption, "STEP inside the KEYFRAME"},
      {"FRAME in keyframe", [](UcirBytes& b) { b.U8(2).U64(0).U32(1).U8(1).U64(0).U32(0); }, true,
       StatusCode::kCorruption, "FRAME inside the KEYFRAME"},
      {"map wraps",
       [](UcirBytes& b) {
         b.U8(2).U64(0).U32(1).U8(9).U64(~0ull).U64(2).U8(0).U64(0).U64(0).U16(0).U16(0);
       },
       true, StatusCode::kCorruption, "MEM_MAP range wraps"},
      {"keyframe SPREG size",
       [&](UcirBytes& b) { b.U8(2).U64(0).U32(1).U8(6).U16(122).U16(8).Bytes(eight); }, true,
       StatusCode::kCorruption, "SPREG of xmm0 holds 8 bytes, the register has 16"},
      {"keyframe pid", [](UcirBytes& b) { b.U8(2).U64(1ull << 40).U32(0); }, true,
       StatusCode::kUnsupported, "is too large"},
      {"keyframe unknown op", [](UcirBytes& b) { b.U8(2).U64(0).U32(1).U8(0x42); }, true,
       StatusCode::kCorruption, "unknown op type 0x42"},
      {"FRAME in FRAME",
       [](UcirBytes& b) { b.U8(1).U64(0).U32(2).U8(3).U64(1).U32(0).U8(1).U64(0).U32(0); }, false,
       StatusCode::kCorruption, "FRAME inside a FRAME"},
      {"KEYFRAME in FRAME",
       [](UcirBytes& b) { b.U8(1).U64(0).U32(2).U8(4).U8(1).U8(2).U64(0).U32(0); }, false,
       StatusCode::kCorruption, "KEYFRAME inside a FRAME"},
      {"unknown op", [](UcirBytes& b) { b.U8(1).U64(0).U32(2).U8(4).U8(1).U8(14); }, false,
       StatusCode::kCorruption, "unknown op type 0xe"},
      {"STEP in SYSCALL", [](UcirBytes& b) { b.U8(12).U32(1).U64(0).U8(0).U16(1).U8(4).U8(2); },
       false, StatusCode::kCorruption, "STEP inside the SYSCALL"},
      {"SYSCALL in SYSCALL",
       [](UcirBytes& b) { b.U8(12).U32(1).U64(0).U8(0).U16(1).U8(12).U32(1).U64(0).U8(0).U16(0); },
       false, StatusCode::kCorruption, "SYSCALL inside the SYSCALL"},
      {"FRAME in SYSCALL",
       [](UcirBytes& b) { b.U8(12).U32(1).U64(0).U8(0).U16(1).U8(1).U64(0).U32(0); }, false,
       StatusCode::kCorruption, "FRAME inside the SYSCALL"},
      {"SPREG size", [&](UcirBytes& b) { b.U8(6).U16(122).U16(8).Bytes(eight).U8(4).U8(1); }, false,
       StatusCode::kCorruption, "SPREG of xmm0 holds 8 bytes"},
      {"pid",
       [](UcirBytes& b) {
         b.U8(1).U64(0).U32(1).U8(4).U8(1);
         b.U8(1).U64(1ull << 31).U32(1).U8(4).U8(1);
       },
       false, StatusCode::kUnsupported, "pid 2147483648 is too large"},
  };
  for (const StreamCase& c : cases) {
    SCOPED_TRACE(c.name);
    UcirBytes b;
    if (!c.at_open) b.U8(2).U64(0).U32(0);  // an empty keyframe
    c.ops(b);
    auto r = OpenBytes(testing::HandUcirFile(b.bytes()), "bad.ucir");
    Status s;
    if (!r.ok()) {
      s = r.status();
    } else {
      Event e;
      for (int i = 0; i < 100 && s.ok(); ++i) {
        auto more = (*r)->Next(&e);
        if (!more.ok()) s = more.status();
        if (more.ok() && !*more) break;
      }
    }
    EXPECT_EQ(!r.ok(), c.at_open) << s.ToString();
    EXPECT_EQ(s.code(), c.code) << s.ToString();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("bad.ucir: "), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("offset 0x"), std::string::npos) << s.ToString();
  }
}

TEST(UsercornInvalidTest, SeekRejectsForeignPositions) {
  auto r = OpenBytes(ValidFile());
  ASSERT_TRUE(r.ok());
  for (const ReaderPosition& p :
       {ReaderPosition{1, 0}, ReaderPosition{~0ull, 0}, ReaderPosition{(84ull << 17) | 70000, 0},
        ReaderPosition{84ull << 17, ~0ull}}) {
    EXPECT_EQ((*r)->Seek(p).code(), StatusCode::kInvalidArgument) << p.offset << "/" << p.aux;
  }
}

}  // namespace
}  // namespace backstep::core
