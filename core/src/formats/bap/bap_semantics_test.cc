// BAP frames as bap-frames defines them (piqi/stdframe.piqi: the pre-list
// holds values before the instruction, the post-list values after;
// lib/frame_events.ml turns them into reads before and writes after), on
// traces built frame by frame in both producer styles: a pre-list register
// is known at the frame's own position, and after a thread's last frame
// the pc is known only when the frame lists it (the legacy tracer writes
// no pc operand).
#include <gtest/gtest.h>

#include "backstep/core/cursor.h"
#include "backstep/core/trace.h"
#include "formats/bap/bap_reader.h"
#include "testing/bap_fixtures.h"

namespace backstep::core {
namespace {

namespace t = testing;

std::shared_ptr<Trace> Open(const std::vector<t::bp::frame>& frames) {
  const auto source = MemorySource(t::HandBapFile(frames), "s.frames");
  ReaderFactory factory = [source]() -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(auto r, BapReader::Open(source));
    return std::unique_ptr<TraceReader>(std::move(r));
  };
  auto trace = Trace::OpenWith(factory, "", {});
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  return trace.ok() ? *trace : nullptr;
}

// Thread 1's register `name` at position `p`, if known.
std::optional<std::uint64_t> RegisterAt(const Trace& trace, std::uint64_t p, const char* name) {
  auto cursor = trace.NewCursor();
  EXPECT_TRUE(cursor.ok());
  EXPECT_TRUE((*cursor)->Seek(Position(p)).ok());
  auto regs = (*cursor)->Registers(ThreadId(1));
  EXPECT_TRUE(regs.ok());
  const RegisterId id = *X86_64().Find(name);
  if (!(*regs)->known(id)) return std::nullopt;
  return (*regs)->u64(id);
}

TEST(BapSemantics, PreListRegistersAreKnownAtTheFramesPosition) {
  // Legacy: mov rbp, rsp reads RSP, writes RBP.
  auto legacy = Open({t::BapStd(0, 0x401000, "\x48\x89\xe5", {t::BapReg("RSP", 0x7fff0000)},
                                {t::BapReg("RBP", 0x7fff0000)}),
                      t::BapStd(0, 0x401003, "\x90", {})});
  ASSERT_TRUE(legacy);
  EXPECT_EQ(RegisterAt(*legacy, 0, "rsp"), std::optional<std::uint64_t>(0x7fff0000));
  EXPECT_EQ(RegisterAt(*legacy, 1, "rbp"), std::optional<std::uint64_t>(0x7fff0000));
  // TCG plugin: frame 0's pre-list holds every register.
  std::vector<t::bp::operand_info> every;
  const char* names[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r15"};
  for (int i = 0; i < 10; ++i) every.push_back(t::BapReg(names[i], 0x100 + i, 8, false));
  every.push_back(t::BapReg("rip", 0x401000, 8, false));
  auto plugin =
      Open({t::BapStd(0, 0x401000, "\x48\x89\xe5", every,
                      {t::BapReg("rbp", 0x107, 8, false), t::BapReg("rip", 0x401003, 8, false)}),
            t::BapStd(0, 0x401003, "\x90", every)});
  ASSERT_TRUE(plugin);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(RegisterAt(*plugin, 0, names[i]), std::optional<std::uint64_t>(0x100 + i))
        << names[i];
  }
}

TEST(BapSemantics, PcAfterAThreadsLastFrameIsWhatTheFrameSays) {
  // Legacy: mov eax, 1; jmp +0x10 (taken): no pc operand, the pc after the
  // jump is not in the file.
  auto legacy = Open({t::BapStd(0, 0x401000, "\xb8\x01\x00\x00\x00", {}, {t::BapReg("RAX", 1)}),
                      t::BapStd(0, 0x401005, "\xeb\x10", {})});
  ASSERT_TRUE(legacy);
  EXPECT_EQ(RegisterAt(*legacy, 1, "rip"), std::optional<std::uint64_t>(0x401005));
  EXPECT_EQ(RegisterAt(*legacy, 2, "rip"), std::nullopt);
  // TCG plugin: the post-list has rip (its value changed).
  auto plugin =
      Open({t::BapStd(0, 0x401000, "\xb8\x01\x00\x00\x00", {}, {t::BapReg("rax", 1, 8, false)}),
            t::BapStd(0, 0x401005, "\xeb\x10", {t::BapReg("rax", 1, 8, false)},
                      {t::BapReg("rip", 0x401017, 8, false)})});
  ASSERT_TRUE(plugin);
  EXPECT_EQ(RegisterAt(*plugin, 2, "rip"), std::optional<std::uint64_t>(0x401017));
  EXPECT_EQ(RegisterAt(*plugin, 2, "rax"), std::optional<std::uint64_t>(1));
}

}  // namespace
}  // namespace backstep::core
