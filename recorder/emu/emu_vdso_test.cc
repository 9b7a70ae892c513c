// The emu engine on a program that reads the clocks (tests/programs/clocks.c,
// PIE and static): the vDSO is hidden (vdso.h), so libc's clock functions
// are system calls the engine runs in the tracee, instead of reads of the
// kernel's [vvar] page that it would refuse.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>

#include "backstep/core/byte_source.h"
#include "backstep/core/format_registry.h"
#include "recorder/emu/emu_recorder.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

TEST(EmuVdso, ClockFunctionsBecomeSystemCalls) {
  for (const char* build : {"O0_pie", "O2_static"}) {
    SCOPED_TRACE(build);
    const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/clocks_" + build;
    const std::string trace = ::testing::TempDir() + "/clocks.emu.ucir";
    const std::string out = ::testing::TempDir() + "/clocks.out";
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
    std::string printed;
    std::getline(std::ifstream(out), printed);
    EXPECT_EQ(printed, "clocks ok");
    // The clock functions' system calls are in the trace.
    auto source = core::MapFile(trace);
    ASSERT_TRUE(source.ok());
    auto reader = core::OpenTraceSource(*source);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    std::set<std::string> calls;
    core::Event e;
    for (;;) {
      auto more = (*reader)->Next(&e);
      ASSERT_TRUE(more.ok()) << more.status().message();
      if (!*more) break;
      const std::string d(e.description);
      if (d.rfind("syscall ", 0) == 0) calls.insert(d.substr(0, d.find('(')));
    }
    EXPECT_TRUE(calls.count("syscall 228")) << "clock_gettime";
    EXPECT_TRUE(calls.count("syscall 96")) << "gettimeofday";
    EXPECT_TRUE(calls.count("syscall 201")) << "time";
    std::remove(trace.c_str());
    std::remove(out.c_str());
  }
}

}  // namespace
}  // namespace backstep::record
