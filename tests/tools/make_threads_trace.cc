// backstep_make_threads_trace OUT: writes the two-thread i386 usercorn trace
// of core/testing/include/backstep/testing/i386_threads_trace.h and prints its facts, one
// "key value" line each, for tests/e2e/test_threads_reads.py.
#include <cstdio>
#include <string>

#include "backstep/testing/i386_threads_trace.h"

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: %s OUT\n", argv[0]);
    return 2;
  }
  auto facts = backstep::core::testing::WriteI386ThreadsTrace(argv[1]);
  if (!facts.ok()) {
    std::fprintf(stderr, "%s\n", facts.status().ToString().c_str());
    return 1;
  }
  const auto& f = *facts;
  const std::pair<const char*, unsigned long long> rows[] = {
      {"code", f.code},
      {"data", f.data},
      {"counter", f.counter},
      {"flag", f.flag},
      {"counter_initial", f.counter_initial},
      {"flag_value", f.flag_value},
      {"thread2_eax", f.thread2_eax},
      {"thread2_esp", f.thread2_esp},
      {"iterations", f.iterations},
      {"events", f.events},
      {"flag_write_event", f.flag_write_event},
      {"thread2_read_event", f.thread2_read_event},
      {"first_read_event", f.first_read_event},
  };
  for (const auto& [key, value] : rows) std::printf("%s 0x%llx\n", key, value);
  return 0;
}
