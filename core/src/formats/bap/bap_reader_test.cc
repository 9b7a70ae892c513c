// The BAP reader on hand-assembled files (testing/bap_fixtures.h): every
// frame kind, both producer styles, threads, the pc from the thread's next
// instruction, the header, TOC and meta frame, Tell/Seek, unfinished files.
#include <gtest/gtest.h>

#include "backstep/core/format_registry.h"
#include "formats/bap/bap_test_util.h"
#include "testing/bap_fixtures.h"

namespace backstep::core {
namespace {

using bap_test::OpenBytes;
using bap_test::ReadAll;

std::string Property(const TraceHeader& h, const std::string& key) {
  for (const auto& [k, v] : h.properties) {
    if (k == key) return v;
  }
  return "<none>";
}

// What docs/formats/bap.md (§4.4 and "Events") says each frame of
// SmallBapFrames() means, written out by hand.
const std::vector<std::string> kSmallEvents = {
    // Then the pre-list of the thread's next frame: its registers until then.
    "instruction t1 R0x401000=488b042500106000 R0x601000=8877665544332211 "
    "rax=0x1122334455667788 rax=0x1122334455667788 rip=0x401008",
    "instruction t2 R0x402000=48ffc3 rbx=0x5 eflags=0x202 msr_c0000102=0xffff800000000000 "
    "rbx=0x6 eflags=0x206 rsp=0x7ffe0010 rbx=0x6 rip=0x403000",
    "marker t1 \"modload libc.so.6 [0x7f0000000000, 0x7f0000100000)\"",
    "instruction t1 R0x401008=4889042508106000 rax=0x1122334455667788 rip=0x401012 "
    "W0x601008=8877665544332211",
    "syscall t1 \"syscall 1 at 0x401010 (args 1 6295552 8)\"",
    "exception t2 \"exception 14 from 0x402003 to 0x403000\"",
    "marker t1 \"taint intro (2 entries)\" W0x601010=61626364",
    "marker t2 \"key frame\" rcx=0x7 W0x601020=78797a",
    "instruction t2 R0x403000=53 rsp=0x7ffe0010 rbx=0x6 rsp=0x7ffe0008 eflags=0x246 "
    "W0x7ffe0008=0600000000000000",
    "instruction t1 R0x401012=8b142510106000 R0x601010=61626364 rdx=0x64636261 rip=0x401019",
    "instruction t1 R0x401019=90",
};

TEST(BapReaderTest, SmallTraceEvents) {
  auto r = OpenBytes(testing::SmallBapTrace());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadAll(**r), kSmallEvents);
}

TEST(BapReaderTest, TheRegistrySniffsAndWritesBap) {
  const FormatInfo* bap = FindFormat("bap");
  ASSERT_NE(bap, nullptr);
  EXPECT_TRUE(bap->create_writer != nullptr);
  auto r = OpenTraceSource(MemorySource(testing::SmallBapTrace(), "s.frames"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->header().format, "bap");
  std::vector<std::uint8_t> other = testing::SmallBapTrace();
  other[7] ^= 0x10;  // not BAP's magic: nobody's
  EXPECT_TRUE(OpenTraceSource(MemorySource(other, "o.frames")).status().IsUnsupported());
}

// A meta time far outside a long long is shown as written (converting it
// would be undefined behaviour).
TEST(BapReaderTest, HugeMetaTimeIsShownAsWritten) {
  auto meta = testing::BapMeta();
  meta.set_time(-2.17e122);
  auto r = OpenBytes(testing::HandBapFile(testing::SmallBapFrames(), {}, meta), "t.frames");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Property((*r)->header(), "time"), "-2.17e+122 (out of range)");
}

TEST(BapReaderTest, HeaderAndInitialState) {
  auto r = OpenBytes(testing::SmallBapTrace(), "small.frames");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const TraceHeader& h = (*r)->header();
  EXPECT_EQ(h.format, "bap");
  EXPECT_EQ(h.arch, &X86_64());
  EXPECT_EQ(h.address_kind, AddressKind::kVirtual);
  EXPECT_TRUE(h.records_reads);
  EXPECT_EQ(h.declared_events, std::optional<std::uint64_t>(11));
  EXPECT_EQ(Property(h, "version"), "3");
  EXPECT_EQ(Property(h, "tracer"), "qemu 2.0.0");
  EXPECT_EQ(Property(h, "target"), "/tmp/prog");
  EXPECT_EQ(Property(h, "user"), "alice@box");
  EXPECT_EQ(Property(h, "time"), "1700000000");
  // 11 frames, m = 4: entries before frames 4 and 8.
  EXPECT_NE(Property(h, "toc").find(": 2 entries of 4 frames"), std::string::npos)
      << Property(h, "toc");
  EXPECT_EQ((*r)->container().toc_entries, 2u);
  // Each thread knows its first pc and the registers its first frame's
  // pre-list reads (thread 1: none; thread 2: rbx, eflags, the MSR), nothing
  // else; memory is unknown.
  auto initial = (*r)->InitialRegisters();
  ASSERT_EQ(initial.size(), 2u);
  EXPECT_EQ(initial[0].first, ThreadId(1));
  EXPECT_EQ(initial[1].first, ThreadId(2));
  const RegisterId rip = X86_64().pc();
  EXPECT_EQ(initial[0].second.u64(rip), 0x401000u);
  EXPECT_EQ(initial[1].second.u64(rip), 0x402000u);
  EXPECT_EQ(initial[1].second.u64(*X86_64().Find("rbx")), 5u);
  EXPECT_EQ(initial[1].second.u64(X86_64().flags()), 0x202u);
  for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
    if (id != rip && !X86_64().info(id).derived) {
      EXPECT_FALSE(initial[0].second.known(id)) << X86_64().info(id).name;
    }
  }
  std::vector<std::uint8_t> out(16), known(16, 1);
  (*r)->ReadInitialMemory(0x401000, out, known);
  EXPECT_EQ(known, std::vector<std::uint8_t>(16, 0));
}

TEST(BapReaderTest, TellSeekResumes) {
  auto r = OpenBytes(testing::SmallBapTrace());
  ASSERT_TRUE(r.ok());
  Event e;
  std::vector<ReaderPosition> at;
  for (int i = 0; i < 11; ++i) {
    at.push_back((*r)->Tell());
    ASSERT_TRUE(*(*r)->Next(&e));
  }
  ASSERT_FALSE(*(*r)->Next(&e));
  for (int i : {7, 0, 10, 3}) {
    ASSERT_TRUE((*r)->Seek(at[i]).ok());
    EXPECT_EQ(ReadAll(**r), std::vector<std::string>(kSmallEvents.begin() + i, kSmallEvents.end()));
  }
  EXPECT_EQ((*r)->Seek({3, 0}).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE((*r)->ResumePoints().empty());
}

TEST(BapReaderTest, VersionOneHasNoMetaFrame) {
  testing::BapFileSpec spec;
  spec.version = 1;
  auto r = OpenBytes(testing::SmallBapTrace(spec));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->container().frames_start, 48u);
  EXPECT_EQ(Property((*r)->header(), "tracer"), "<none>");
  EXPECT_EQ(ReadAll(**r), kSmallEvents);
}

TEST(BapReaderTest, UnfinishedFileIsReadToItsEnd) {
  testing::BapFileSpec spec;
  spec.finished = false;  // n = 0, T = 0: the tracer died
  auto r = OpenBytes(testing::SmallBapTrace(spec));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE((*r)->header().declared_events.has_value());
  EXPECT_NE(Property((*r)->header(), "toc").find("none"), std::string::npos);
  EXPECT_EQ(ReadAll(**r), kSmallEvents);
}

TEST(BapReaderTest, DeclaredCountBoundsTheFrames) {
  // n counts fewer frames than the region holds: n wins (libtrace's rule).
  std::vector<std::uint8_t> bytes = testing::SmallBapTrace();
  bytes[32] = 5;
  auto r = OpenBytes(bytes);
  ASSERT_TRUE(r.ok());
  auto events = ReadAll(**r);
  ASSERT_EQ(events.size(), 5u);
  // Frame 3's pc comes from frame 9, which lies past n: unknown, so no rip.
  EXPECT_EQ(events[3],
            "instruction t1 R0x401008=4889042508106000 rax=0x1122334455667788 "
            "W0x601008=8877665544332211");
}

TEST(BapReaderTest, OtherArchitecturesAreNotSupportedYet) {
  struct Case {
    std::uint64_t arch, machine;
    std::string message;
  };
  for (const Case& c :
       {Case{35, 0, "not supported yet: arm"}, Case{78, 0, "not supported yet: aarch64"},
        Case{8, 64, "not supported yet: mips"}, Case{9, 2, "i8086"},
        Case{500, 0, "frame_architecture 500"}}) {
    testing::BapFileSpec spec;
    spec.arch = c.arch;
    spec.machine = c.machine;
    auto r = OpenBytes(testing::SmallBapTrace(spec), "arch.frames");
    ASSERT_FALSE(r.ok()) << c.arch;
    EXPECT_TRUE(r.status().IsUnsupported()) << r.status().ToString();
    EXPECT_NE(r.status().message().find("arch.frames: header at offset 0x10: "), std::string::npos)
        << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().ToString();
  }
}

TEST(BapReaderTest, I386LegacyAndPluginNames) {
  // A 32-bit trace (machine 1, and 0 = unspecified): legacy upper-case and
  // TCG plugin names map to the i386 table; values are 4 bytes.
  std::vector<testing::bp::frame> frames;
  frames.push_back(
      testing::BapStd(0, 0x8048000, std::string("\x01\xd8", 2),
                      {testing::BapReg("EAX", 2, 4), testing::BapReg("ebx", 3, 4, false)},
                      {testing::BapReg("EAX", 5, 4), testing::BapReg("EFLAGS", 0x206, 4),
                       testing::BapMem(0xbffff000, std::string("\x05\x00\x00\x00", 4), true)}));
  frames.push_back(
      testing::BapStd(0, 0x8048002, "\x90", {testing::BapReg("esp", 0xbffff000, 4, false)}));
  for (std::uint64_t machine : {1, 0, 3}) {
    testing::BapFileSpec spec;
    spec.machine = machine;
    auto r = OpenBytes(testing::HandBapFile(frames, spec));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)->header().arch, &I386());
    EXPECT_EQ((*r)->InitialRegisters().at(0).second.u64(I386().pc()), 0x8048000u);
    EXPECT_EQ(ReadAll(**r),
              (std::vector<std::string>{
                  "instruction t1 R0x8048000=01d8 eax=0x2 ebx=0x3 eax=0x5 eflags=0x206 "
                  "esp=0xbffff000 eip=0x8048002 W0xbffff000=05000000",
                  "instruction t1 R0x8048002=90 esp=0xbffff000"}));
  }
}

TEST(BapReaderTest, KeyFrameOfTwoThreadsIsRefused) {
  std::vector<testing::bp::frame> frames = testing::SmallBapFrames();
  auto* lists = frames[7].mutable_key_frame()->mutable_tagged_value_lists();
  lists->add_elem()->mutable_value_source_tag()->set_thread_id(0);
  lists->mutable_elem(1)->mutable_value_list();
  auto r = OpenBytes(testing::HandBapFile(frames), "k.frames");
  ASSERT_TRUE(r.ok());
  auto events = ReadAll(**r);
  ASSERT_EQ(events.size(), 8u);
  EXPECT_NE(events.back().find("Unsupported: k.frames: frame 7 at offset 0x"), std::string::npos)
      << events.back();
  EXPECT_NE(events.back().find("threads 1 and 0"), std::string::npos) << events.back();
}

TEST(BapReaderTest, LookaheadFindsTheThreadsNextInstructionFarAway) {
  // Thread 0 runs once, thread 1 runs 3000 times, then thread 0 again: its
  // first instruction's pc after is the far one.
  std::vector<testing::bp::frame> frames;
  frames.push_back(testing::BapStd(0, 0x1000, "\x90", {}));
  for (int i = 0; i < 3000; ++i) frames.push_back(testing::BapStd(1, 0x2000 + i, "\x90", {}));
  frames.push_back(testing::BapStd(0, 0x5555, "\x90", {}));
  auto r = OpenBytes(testing::HandBapFile(frames));
  ASSERT_TRUE(r.ok());
  Event e;
  ASSERT_TRUE(*(*r)->Next(&e));
  ASSERT_EQ(e.registers.size(), 1u);
  EXPECT_EQ(e.registers[0].reg, X86_64().pc());
  EXPECT_EQ(e.registers[0].value[0], 0x55);
  EXPECT_EQ(e.registers[0].value[1], 0x55);
}

}  // namespace
}  // namespace backstep::core
