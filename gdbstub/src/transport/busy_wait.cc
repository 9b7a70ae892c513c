#include "transport/busy_wait.h"

#include <sched.h>

namespace backstep::gdbstub {

std::chrono::microseconds BusyWait::Allowed(std::chrono::microseconds budget) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (::sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) < 2) {
    return std::chrono::microseconds(0);
  }
  return budget;
}

}  // namespace backstep::gdbstub
