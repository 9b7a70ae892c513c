#include "recorder/one_cpu.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace backstep::record {

int FirstAllowedCpu() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  sched_getaffinity(0, sizeof mine, &mine);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &mine)) ++cpu;
  return cpu < CPU_SETSIZE ? cpu : 0;
}

core::Status PinToCpu(pid_t pid, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(pid, sizeof one, &one) != 0)
    return core::Status::IOError("cannot pin the program to CPU " + std::to_string(cpu) + ": " +
                                 std::strerror(errno));
  return core::Status::Ok();
}

ThreadOnCpu::ThreadOnCpu(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof saved_, &saved_) != 0) return;
  pinned_ = PinToCpu(0, cpu).ok();
}

ThreadOnCpu::~ThreadOnCpu() {
  if (pinned_) sched_setaffinity(0, sizeof saved_, &saved_);
}

}  // namespace backstep::record
