// Answers given to a recording instead of the kernel's, for the system calls
// whose answer differs from run to run: getrandom's bytes, the clock reads
// (clock_gettime, gettimeofday, time: the vDSO is hidden) and sysinfo
// (uptime, free memory). The engine cross-checks give the emu and native
// engines' runs the ptrace run's answers (EmuOptions, NativeOptions), so
// that two runs of a program are the same run.
//
// Thread-safety: a GivenAnswers is used by one recording.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/tracee.h"

namespace backstep::record {

// A system call's answer: its number, its result and the bytes the kernel
// wrote at its output pointer.
struct KernelAnswer {
  std::uint64_t nr = 0, result = 0;
  std::vector<std::uint8_t> bytes;
};

// Gives the answers of two lists, each taken in order: the bytes successive
// getrandom calls return, and what successive clock reads and sysinfo calls
// return (a call of another number than the next one listed is the
// kernel's); beyond a list, the kernel's. The lists must outlive it.
class GivenAnswers {
 public:
  GivenAnswers(std::span<const std::vector<std::uint8_t>> getrandom,
               std::span<const KernelAnswer> kernel)
      : getrandom_(getrandom), kernel_(kernel) {}

  // At the return of system call `nr` (`args`; *result: the kernel's
  // result, a user_regs_struct rax), whose effects are about to be read
  // from `tracee`: writes the next given answer of its kind into the
  // tracee's memory and *result (the caller sets the registers). Other
  // calls, failed ones and those beyond the lists: nothing.
  core::Status Apply(Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6],
                     unsigned long long* result);

 private:
  std::span<const std::vector<std::uint8_t>> getrandom_;
  std::span<const KernelAnswer> kernel_;
  std::size_t next_random_ = 0, next_answer_ = 0;
};

}  // namespace backstep::record
