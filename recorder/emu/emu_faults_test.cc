// The emu engine on signals raised by faulting instructions
// (tests/programs/faults.c): a store into a read-only page (SIGSEGV, the
// handler makes the page writable and returns: rt_sigreturn, the store runs
// again) and a division by zero (SIGFPE, the handler leaves with
// siglongjmp). Each is delivered by the kernel to the tracee and recorded as
// an event of its own (the frame, the registers, the handler's address).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "backstep/core/byte_source.h"
#include "backstep/core/format_registry.h"
#include "recorder/emu/emu_recorder.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

TEST(EmuFaults, SynchronousSignalsAreDelivered) {
  for (const char* build : {"O0_static", "O2_pie"}) {
    SCOPED_TRACE(build);
    const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/faults_" + build;
    const std::string trace = ::testing::TempDir() + "/faults.emu.ucir";
    const std::string out = ::testing::TempDir() + "/faults.out";
    auto sink = UsercornSink::Create(trace, false);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    RecordOptions options;
    options.spawn.argv = {program};
    options.spawn.stdout_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    options.portable_cpuid = true;
    options.reads = false;
    auto r = RecordEmulated(options, **sink);
    close(options.spawn.stdout_fd);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->end, RecordResult::End::kExited);
    EXPECT_EQ(r->exit_code, 0);
    EXPECT_EQ(r->signals, 2u);
    EXPECT_EQ(r->missed_bytes, 0u);
    EXPECT_EQ(r->missed_registers, 0u);
    std::string printed;
    std::getline(std::ifstream(out), printed);
    EXPECT_EQ(printed, "segv 1 value 42 fpe 8");
    // The trace holds one event per instruction and per delivery (and the exit).
    auto source = core::MapFile(trace);
    ASSERT_TRUE(source.ok());
    auto reader = core::OpenTraceSource(*source);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    std::uint64_t events = 0;
    core::Event e;
    for (;;) {
      auto more = (*reader)->Next(&e);
      ASSERT_TRUE(more.ok()) << more.status().message();
      if (!*more) break;
      ++events;
    }
    EXPECT_EQ(events, r->instructions + r->signals + 1);
    std::remove(trace.c_str());
    std::remove(out.c_str());
  }
}

}  // namespace
}  // namespace backstep::record
