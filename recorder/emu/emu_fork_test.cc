// The emu engine on a program that forks (tests/programs/untraced.c): the
// parent is recorded, the child runs untraced as without the recorder (its
// rdtsc and cpuid run; untraced.h), from the emulated parent's state.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "recorder/emu/emu_recorder.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

TEST(EmuFork, ParentRecordedChildUntraced) {
  const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/untraced_O0_static";
  const std::string trace = ::testing::TempDir() + "/untraced.emu.ucir";
  auto sink = UsercornSink::Create(trace, false);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  RecordOptions options;
  options.spawn.argv = {program};
  options.spawn.stdout_fd = fds[1];
  options.portable_cpuid = true;
  options.reads = false;
  auto r = RecordEmulated(options, **sink);
  close(fds[1]);
  std::string printed;
  char buf[256];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) printed.append(buf, n);
  close(fds[0]);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->end, RecordResult::End::kExited);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(printed, "child 1\nparent 1\nchild status 3 signal 0\n");
  std::remove(trace.c_str());
}

}  // namespace
}  // namespace backstep::record
