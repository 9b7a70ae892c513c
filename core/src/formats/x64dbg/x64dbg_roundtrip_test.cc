// Writer round trip: the hand-made program (testing/x64dbg_fixtures.h, in
// the reader's own event model) written by X64dbgTraceWriter and read back by
// X64dbgReader means the same, event by event; the file re-written from the
// reader is byte-identical; the writer's refusals are clear.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "backstep/core/format_registry.h"
#include "backstep/testing/x64dbg_fixtures.h"
#include "formats/x64dbg/x64dbg_format.h"
#include "formats/x64dbg/x64dbg_test_util.h"
#include "formats/x64dbg/x64dbg_trace_writer.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

class X64dbgRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/backstep-x64dbg-rt-XXXXXX";
    dir_ = mkdtemp(name);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::uint8_t> Bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  std::string dir_;
};

TEST_F(X64dbgRoundTrip, ProgramReadsBackAsWritten) {
  for (const bool i386 : {false, true}) {
    for (const bool threads : {false, true}) {
      for (const std::uint64_t reveal : {0, 512, 2000}) {
        SCOPED_TRACE("i386 " + std::to_string(i386) + " threads " + std::to_string(threads) +
                     " reveal " + std::to_string(reveal));
        testing::X64dbgProgramOptions o;
        o.i386 = i386;
        o.instructions = 1300;
        o.reveal_at = reveal;
        o.two_threads = threads;
        o.seed = 5 + reveal;
        const testing::FakeTrace want = testing::MakeX64dbgProgram(o);
        const std::string path = dir_ + "/p.trace64";
        ASSERT_TRUE(testing::WriteX64dbgTrace(want, path).ok());
        auto reader = OpenTraceFile(path);
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        EXPECT_EQ((*reader)->header().format, "x64dbg");
        EXPECT_TRUE((*reader)->header().records_reads);
        auto got = testing::CaptureTrace(**reader);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        testing::ExpectSameTrace(want, *got);
        // Full dumps (hence resume points) on blocks 512 and 1024 once every
        // register is known.
        auto points = (*reader)->ResumePoints();
        EXPECT_EQ(points.size(), reveal <= 512 ? 2u : 0u);
        // Written again from the reader: the same events; and a fixed point
        // from there (the first file may differ only in the old value of a
        // PUSH's stack slot, which the source knew from its image and which
        // nobody reads back).
        std::string previous = path;
        for (const char* next : {"/q.trace64", "/r.trace64"}) {
          auto again = OpenTraceFile(previous);
          ASSERT_TRUE(again.ok());
          X64dbgTraceWriter writer(dir_ + next);
          ASSERT_TRUE(ConvertTrace(**again, writer, next).ok());
          auto reread = OpenTraceFile(dir_ + next);
          ASSERT_TRUE(reread.ok());
          auto events = testing::CaptureTrace(**reread);
          ASSERT_TRUE(events.ok());
          testing::ExpectSameTrace(want, *events);
          previous = dir_ + next;
        }
        EXPECT_EQ(Bytes(dir_ + "/q.trace64"), Bytes(dir_ + "/r.trace64"));
        EXPECT_EQ((*reader)->header().arch, i386 ? &I386() : &X86_64());
      }
    }
  }
}

// The naive model (testing/x64dbg_fixtures.h) of files as x64dbg lays
// them out: a thread id whose block also parses without it (200), switches
// every 1..12 blocks, PUSHes under bit 0, a file ending after a switch or
// not.
TEST_F(X64dbgRoundTrip, X64dbgLayoutsReadAsTheModel) {
  for (const bool i386 : {false, true}) {
    for (const bool end_with_switch : {false, true}) {
      SCOPED_TRACE("i386 " + std::to_string(i386) + " end with switch " +
                   std::to_string(end_with_switch));
      testing::X64dbgProgramOptions o;
      o.i386 = i386;
      o.instructions = 1100;
      o.reveal_at = 0;
      o.thread_b = 200;
      o.end_with_switch = end_with_switch;
      o.seed = 11;
      const std::string path = dir_ + "/p.trace64";
      ASSERT_TRUE(testing::WriteX64dbgProgram(o, path).ok());
      auto reader = OpenTraceFile(path);
      ASSERT_TRUE(reader.ok()) << reader.status().ToString();
      auto got = testing::CaptureTrace(**reader);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      testing::ExpectSameTrace(testing::MakeX64dbgProgram(o), *got);
      EXPECT_EQ((*reader)->ResumePoints().size(), 2u);  // blocks 512 and 1024
    }
  }
}

TEST_F(X64dbgRoundTrip, HeaderIsX64dbgsJson) {
  const std::string path = dir_ + "/p.trace64";
  ASSERT_TRUE(testing::WriteX64dbgTrace(testing::MakeX64dbgProgram(), path).ok());
  const std::vector<std::uint8_t> bytes = Bytes(path);
  ASSERT_GT(bytes.size(), 8u);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "TRAC");
  const std::uint32_t n = bytes[4] | bytes[5] << 8 | bytes[6] << 16 | bytes[7] << 24;
  EXPECT_EQ(
      std::string(bytes.begin() + 8, bytes.begin() + 8 + n),
      R"({"ver":1,"arch":"x64","hashAlgorithm":"murmurhash","hash":"0x0","compression":"","path":""})");
  // Block 0: type 0, thread id flag, the first thread's id.
  const std::size_t b = 8 + n;
  EXPECT_EQ(bytes[b], 0);
  EXPECT_EQ(bytes[b + 3] & kX64dbgFlagThreadId, kX64dbgFlagThreadId);
  EXPECT_EQ(bytes[b + 4] | bytes[b + 5] << 8, int(testing::kX64dbgThreadA));
}

TEST_F(X64dbgRoundTrip, WriterRefusals) {
  testing::FakeTrace base = testing::MakeX64dbgProgram({.instructions = 40});
  struct Case {
    std::string name;
    std::function<void(testing::FakeTrace&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"physical", [](auto& t) { t.address_kind = AddressKind::kPhysical; }, "physical-memory"},
      {"syscall", [](auto& t) { t.events[3].kind = EventKind::kSyscall; },
       "event 3 is a syscall event; x64dbg traces hold instructions only"},
      {"memory clear", [](auto& t) { t.events[2].flags |= kEventClearsMemory; },
       "event 2 clears memory"},
      {"no opcode", [](auto& t) { t.events[0].reads.erase(t.events[0].reads.begin()); },
       "event 0: no instruction bytes"},
      {"thread 0", [](auto& t) { t.events[0].thread = ThreadId(0); }, "is not an x64dbg thread id"},

      {"unknown old value",
       [](auto& t) {
         t.events[0].reads.push_back({0x900000, {1, 2, 3, 4, 5, 6, 7, 8}}),
             t.events[0].writes.push_back({0x910000, {1}});
       },
       "memory at 0x910000 is unknown before the instruction"},
      {"forget a register",
       [](auto& t) {
         for (auto& e : t.events) {
           if ((e.flags & kEventClearsRegisters) && !e.registers.empty()) {
             // A switch-out: the thread's registers at its next block.
             e.registers.erase(e.registers.begin());  // rax
             break;
           }
         }
       },
       "cannot forget a register"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::FakeTrace t = base;
    c.change(t);
    Status s = testing::WriteX64dbgTrace(t, dir_ + "/r.trace64");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.ToString();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.ToString();
    EXPECT_FALSE(fs::exists(dir_ + "/r.trace64"));  // nothing half-written
  }
}

// A source with a memory image (a recording): x64dbg's reader knows memory
// only where blocks touched it, so the image would be lost; refused in one
// line (before, it was dropped without a word and recordings were refused
// for their first instruction's bytes).
TEST_F(X64dbgRoundTrip, MemoryImageIsRefused) {
  TraceHeader header;
  header.arch = &X86_64();
  header.regions.push_back({0x700000, 4, "data", "", 0});
  auto image = [](Address a, std::span<std::uint8_t> out, std::span<std::uint8_t> known) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = 7;
      known[i] = a + i >= 0x700001 ? 1 : 0;
    }
  };
  const std::string path = dir_ + "/image.trace64";
  X64dbgTraceWriter writer(path);
  const Status s = writer.Begin(header, {}, image);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_EQ(s.message(), path +
                             ": x64dbg traces hold memory only where an instruction read or "
                             "wrote it, and the source has a memory image at position 0 (at "
                             "0x700001)");
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace backstep::core
