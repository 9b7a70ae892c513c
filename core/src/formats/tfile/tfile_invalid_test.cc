// Tables of invalid headers and frames (ninja's style): each row changes one
// thing in an otherwise valid hand-built file and names what must happen:
// an error with a given text, or a file that opens with a given property.
#include <gtest/gtest.h>

#include <functional>

#include "backstep/testing/tfile_fixtures.h"
#include "formats/tfile/tfile_reader.h"
#include "util/hex.h"

namespace backstep::core {
namespace {

using testing::TfileBytes;

std::string Bytes(std::string_view s) { return std::string(s); }

// Magic + definitions + blank line + end marker.
std::string File(std::string_view definitions) {
  return Bytes("\x7fTRACE0\n") + std::string(definitions) + "\n" + std::string(4, '\0');
}

struct HeaderRow {
  std::string name;
  std::string bytes;
  StatusCode code;     // kOk: opens
  std::string needle;  // in the error, or in the properties ("key: value" lines)
};

std::string Properties(const TraceHeader& h) {
  std::string out;
  for (const auto& [k, v] : h.properties) out += k + ": " + v + "\n";
  return out;
}

const std::string kAarch64 =
    "tdesc <target><architecture>aarch64</architecture>\n"
    "tdesc <feature name=\"org.gnu.gdb.aarch64.core\"><reg name=\"x0\" bitsize=\"64\"/></feature>\n"
    "tdesc </target>\n";

std::vector<HeaderRow> HeaderRows() {
  const std::string long_line(1000 - 4, 'x');  // "foo " + 996 = 1000 characters
  return {
      {"empty file", "", StatusCode::kCorruption, "not a gdb trace file"},
      {"short magic", Bytes("\x7fTRACE0"), StatusCode::kCorruption, "not a gdb trace file"},
      {"wrong magic", File("R 10\n").replace(6, 1, "1"), StatusCode::kCorruption,
       "expected \"\\x7fTRACE0\\n\""},
      {"no 0x7f", File("R 10\n").replace(0, 1, "T"), StatusCode::kCorruption, "offset 0x0"},
      {"no R line", File("status 0;tnotrun:0\n"), StatusCode::kCorruption, "no `R` line"},
      {"R 0", File("R 0\n"), StatusCode::kCorruption,
       "line 2 at offset 0x8: register block size 0x0"},
      {"R not hex", File("R 2x\n"), StatusCode::kCorruption, "'2x' is not hex"},
      {"R empty", File("R \n"), StatusCode::kCorruption, "is not hex"},
      {"R decimal looks", File("R 970\n"), StatusCode::kOk, "register block: 0x970 (2416 bytes)"},
      {"R absurd", File("R 100001\n"), StatusCode::kCorruption, "out of range"},
      {"R with CR", File("R 10\r\n"), StatusCode::kCorruption, "'10\\x0d' is not hex"},
      {"line of 1000", File("R 10\nfoo " + long_line + "\n"), StatusCode::kCorruption,
       "line 3 at offset 0xd: definition line of 1000 or more"},
      {"line of 999", File("R 10\nfoo " + long_line.substr(1) + "\n"), StatusCode::kOk,
       "warning: line 3 at offset 0xd: unknown definition 'foo xxx"},
      {"no blank line", Bytes("\x7fTRACE0\nR 10\n"), StatusCode::kCorruption,
       "line 3 at offset 0xd: the file ends inside the definitions"},
      {"unknown keyword", File("R 10\nfrobnicate 1\n"), StatusCode::kOk,
       "unknown definition 'frobnicate 1' ignored"},
      {"other architecture", File("R 10\n" + kAarch64), StatusCode::kUnsupported,
       "tdesc: architecture 'aarch64' is not supported"},
      {"no architecture, no rip",
       File("R 10\ntdesc <target><feature name=\"f\"><reg name=\"x0\" bitsize=\"64\"/>\n"
            "tdesc </feature></target>\n"),
       StatusCode::kUnsupported, "names no architecture"},
      {"no architecture, rip",
       File("R 10\ntdesc <target><reg name=\"rip\" bitsize=\"64\"/><reg name=\"eflags\" "
            "bitsize=\"32\"/></target>\n"),
       StatusCode::kOk, "register layout: tdesc (no architecture): 2 registers, 12 bytes"},
      {"tdesc reg without bitsize", File("R 10\ntdesc <target><reg name=\"rip\"/></target>\n"),
       StatusCode::kOk, "warning: tdesc ignored: register 'rip': bitsize missing or invalid"},
      {"tdesc unterminated", File("R 10\ntdesc <target><reg name=\"rip\"\n"), StatusCode::kOk,
       "tdesc ignored: unterminated markup"},
      {"tdesc duplicate regnum",
       File("R 10\ntdesc <target><reg name=\"rip\" bitsize=\"64\" regnum=\"3\"/><reg name=\"rax\" "
            "bitsize=\"64\" regnum=\"3\"/></target>\n"),
       StatusCode::kOk, "duplicate regnum 3"},
      {"tdesc unknown include", File("R 10\ntdesc <target><xi:include href=\"32bit-core.xml\"/>\n"),
       StatusCode::kOk, "include of unknown file '32bit-core.xml'"},
      {"tdesc includes",
       File("R 218\ntdesc <target><architecture>i386:x86-64</architecture>\n"
            "tdesc <xi:include href=\"64bit-core.xml\"/><xi:include href=\"64bit-sse.xml\"/>\n"
            "tdesc </target>\n"),
       StatusCode::kOk, "register layout: tdesc i386:x86-64: 57 registers, 536 bytes"},
      {"tdesc unknown register",
       File("R 18\ntdesc <target><architecture>i386:x86-64</architecture><reg name=\"rip\" "
            "bitsize=\"64\"/><reg name=\"ssp\" bitsize=\"64\"/><reg name=\"eflags\" "
            "bitsize=\"64\"/>\n"
            "tdesc </target>\n"),
       StatusCode::kOk, "unmapped registers: ssp (ignored)"},
      {"tdesc size mismatch",
       File("R 18\ntdesc <target><architecture>i386:x86-64</architecture><reg name=\"rip\" "
            "bitsize=\"64\"/><reg name=\"eflags\" bitsize=\"64\"/>\n"
            "tdesc </target>\n"),
       StatusCode::kOk, "register eflags is 8 bytes in the tdesc, 4 in backstep's table: ignored"},
      {"R shorter than the layout", File("R 80\n"), StatusCode::kOk,
       "past the R size, unavailable: rip eflags"},
      {"R longer than every layout", File("R 1000\n"), StatusCode::kOk,
       "1676 bytes at the end of the R block ignored"},
      {"R of no known layout", File("R 300\n"), StatusCode::kOk,
       "core+sse+linux+segments+avx (816 bytes, the R size matches no known layout)"},
      {"R of core+sse+linux", File("R 220\n"), StatusCode::kOk,
       "no tdesc: assumed gdb's amd64 layout core+sse+linux (544 bytes)"},
      {"malformed tp", File("R 10\ntp T1:1:E:zz:0\n"), StatusCode::kOk,
       "warning: line 3 at offset 0xd: malformed 'T' piece"},
      {"malformed status", File("R 10\nstatus x;tframes:q\n"), StatusCode::kOk,
       "status: malformed running flag, malformed item 'tframes:q'"},
      {"declared frames", File("R 10\nstatus 0;tframes:7\n"), StatusCode::kOk,
       "trace status: not running, 7 frames"},
  };
}

TEST(TfileInvalidTest, Headers) {
  for (const HeaderRow& row : HeaderRows()) {
    SCOPED_TRACE(row.name);
    auto r = TfileReader::Open(
        MemorySource(std::vector<std::uint8_t>(row.bytes.begin(), row.bytes.end()), "bad.tf"));
    if (row.code == StatusCode::kOk) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_NE(Properties((*r)->header()).find(row.needle), std::string::npos)
          << Properties((*r)->header());
      continue;
    }
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), row.code) << r.status().ToString();
    EXPECT_TRUE(r.status().message().starts_with("bad.tf: ")) << r.status().ToString();
    EXPECT_NE(r.status().message().find(row.needle), std::string::npos) << r.status().ToString();
  }
}

struct FrameRow {
  std::string name;
  std::function<void(TfileBytes&)> frames;  // after a valid frame 0
  std::string needle;                       // in Next()'s error at frame 1; "" = no error
};

TEST(TfileInvalidTest, Frames) {
  const std::vector<FrameRow> rows = {
      {"unknown block", [](TfileBytes& b) { b.Frame(1).Raw(std::vector<std::uint8_t>{'Q'}).End(); },
       "unknown block type 0x51 at offset @B"},
      {"M past the frame",
       [](TfileBytes& b) {
         const std::size_t at = b.bytes().size();
         b.Frame(1).M(0x10, "abcd").End();
         b.bytes()[at + 6 + 9] = 9;  // the length's low byte
       },
       "M block at offset @B: length 0x9 at 0x10 runs past the frame's end"},
      {"M header cut",
       [](TfileBytes& b) {
         b.Frame(1).Raw(std::vector<std::uint8_t>{'M', 1}).End();
       },
       "M block at offset @B: the block header runs past"},
      {"M wraps", [](TfileBytes& b) { b.Frame(1).M(~Address{0} - 1, "abcd").End(); },
       "wraps around the address space"},
      {"R short", [](TfileBytes& b) { b.Frame(1).R(15, 0).End(); },
       "R block at offset @B: the register block (16 bytes) runs past the frame's end"},
      {"V short",
       [](TfileBytes& b) {
         b.Frame(1).Raw(std::vector<std::uint8_t>{'V', 1, 2}).End();
       },
       "V block at offset @B: the block (12 bytes) runs past"},
      {"S short",
       [](TfileBytes& b) {
         b.Frame(1).Raw(std::vector<std::uint8_t>{'S', 9, 0, 1}).End();
       },
       "S block at offset @B: the block runs past"},
      {"size past EOF", [](TfileBytes& b) { b.Le(1, 2).Le(0x12345678, 4).Le(0, 8); },
       "tracepoint 1, data size 0x12345678 runs past the end of the file (0x8 bytes left)"},
      {"half header", [](TfileBytes& b) { b.Le(1, 2).Le(0, 2); },
       "the file ends 4 bytes into the 6-byte frame header"},
      {"one byte", [](TfileBytes& b) { b.Le(1, 1); }, "the file ends 1 bytes into"},
      {"short end marker", [](TfileBytes& b) { b.Le(0, 2); }, ""},
      {"no end marker", [](TfileBytes&) {}, ""},
      {"bytes after the end marker", [](TfileBytes& b) { b.EndMarker().Le(0xffffffff, 4); }, ""},
      {"negative tracepoint", [](TfileBytes& b) { b.Frame(-5).R(16, 1).End(); }, ""},
      {"S skipped", [](TfileBytes& b) { b.Frame(1).S("abc").M(1, "x").End(); }, ""},
      {"two R blocks", [](TfileBytes& b) { b.Frame(1).R(16, 1).R(16, 2).End(); }, ""},
  };
  for (const FrameRow& row : rows) {
    SCOPED_TRACE(row.name);
    TfileBytes b("R 10\ntp T1:1000:E:0:0\n");
    const std::uint64_t f0 = b.bytes().size();
    b.Frame(1).M(0x10, "ok").End();
    const std::uint64_t f1 = b.bytes().size();
    row.frames(b);
    std::string needle = row.needle;
    if (auto at = needle.find("@B"); at != std::string::npos) needle.replace(at, 2, HexU64(f1 + 6));
    auto r = TfileReader::Open(MemorySource(b.bytes(), "frames.tf"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Event e;
    auto first = (*r)->Next(&e);
    ASSERT_TRUE(first.ok() && *first) << first.status().ToString();
    auto second = (*r)->Next(&e);
    if (needle.empty()) {
      ASSERT_TRUE(second.ok()) << second.status().ToString();
      if (*second) {
        ASSERT_FALSE(*(*r)->Next(&e));
      }
      continue;
    }
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kCorruption);
    EXPECT_TRUE(
        second.status().message().starts_with("frames.tf: frame 1 at offset " + HexU64(f1) + ": "))
        << second.status().ToString();
    EXPECT_NE(second.status().message().find(needle), std::string::npos)
        << second.status().ToString();
    EXPECT_EQ((*r)->frame_count(), 1u);
    // The error stays; the frame before it stays readable.
    EXPECT_FALSE((*r)->Next(&e).ok());
    ASSERT_TRUE((*r)->Seek({f0, 0}).ok());
    EXPECT_TRUE(*(*r)->Next(&e));
  }
}

TEST(TfileInvalidTest, FrameDetails) {
  TfileBytes b("R 10\ntp T1:1000:E:0:0\n");
  b.Frame(-5).R(16, 1).End().Frame(1).R(16, 2).R(16, 3).End();
  auto r = TfileReader::Open(MemorySource(b.bytes(), "f.tf"));
  ASSERT_TRUE(r.ok());
  Event e;
  ASSERT_TRUE(*(*r)->Next(&e));
  EXPECT_EQ(e.description, "tracepoint -5");
  EXPECT_EQ((*r)->FrameTracepoint(0), nullptr);
  ASSERT_TRUE(*(*r)->Next(&e));  // the first R block wins, as in gdb
  ASSERT_FALSE(e.registers.empty());
  EXPECT_EQ(e.registers[0].value[0], 2);
}

}  // namespace
}  // namespace backstep::core
