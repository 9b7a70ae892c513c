#include <fcntl.h>
#include <gtest/gtest.h>

#include "recorder/native/materialize.h"
#include "recorder/native/native_recorder.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {
TEST(NativeSmoke, RecordsAndMaterializes) {
  for (const char* prog : {"loop_O2_static", "strings_O2_static", "syscalls_O2_static", "scenario_O2_static", "dataflow_O2_static", "tracepoints_O2_static", "loop_O0_static"}) {
    NativeOptions o;
    o.spawn.argv = {std::string(BACKSTEP_RECORD_PROGRAMS) + "/" + prog};
    o.spawn.stdout_fd = open("/dev/null", O_WRONLY);
    const std::string log = ::testing::TempDir() + "/smoke.nlog";
    auto r = RecordNative(o, log);
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto l = ReadNativeLog(log);
    ASSERT_TRUE(l.ok()) << l.status().message();
    auto sink = UsercornSink::Create(::testing::TempDir() + "/smoke.ucir", false);
    ASSERT_TRUE(sink.ok());
    auto m = Materialize(*l, **sink);
    EXPECT_TRUE(m.ok()) << prog << ": " << m.status().message();
    if (m.ok()) printf("%s: %llu syscalls, %llu instructions\n", prog, (unsigned long long)r->syscalls,
           (unsigned long long)m->instructions);
  }
}
}  // namespace
}  // namespace backstep::record
