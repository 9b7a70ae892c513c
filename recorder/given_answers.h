// Answers given to a recording instead of the kernel's, for the system calls
// whose answer differs from run to run: getrandom's bytes, reads of
// /dev/random and /dev/urandom, the clock reads (clock_gettime,
// gettimeofday, time: the vDSO is hidden), sysinfo (uptime, free memory)
// and the stat family's inode numbers and times (a file the first run
// read or wrote has new times in the second). The engine cross-checks give the emu and native
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

// The lists of answers, each taken in order; beyond a list, the kernel's.
struct GivenInputs {
  // The bytes successive getrandom calls return.
  std::span<const std::vector<std::uint8_t>> getrandom;
  // What successive clock reads and sysinfo calls return (a call of another
  // number than the next one listed is the kernel's).
  std::span<const KernelAnswer> kernel;
  // The bytes successive reads of /dev/random or /dev/urandom return (the
  // device found by its number, however it was opened).
  std::span<const std::vector<std::uint8_t>> random_reads;
  // The struct stat successive stat/fstat/lstat/newfstatat calls return: only
  // its inode number and times are given; size, mode, device, links and the
  // result stay the kernel's.
  std::span<const KernelAnswer> file_stats;
};

// Gives the answers of GivenInputs' lists, which must outlive it.
class GivenAnswers {
 public:
  explicit GivenAnswers(const GivenInputs& inputs) : inputs_(inputs) {}

  // At the return of system call `nr` (`args`; *result: the kernel's
  // result, a user_regs_struct rax), whose effects are about to be read
  // from `tracee`: writes the next given answer of its kind into the
  // tracee's memory and *result (the caller sets the registers). Other
  // calls, failed ones and those beyond the lists: nothing.
  core::Status Apply(Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6],
                     unsigned long long* result);

 private:
  core::Status GiveFileStat(Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6]);

  GivenInputs inputs_;
  std::size_t next_random_ = 0, next_answer_ = 0, next_random_read_ = 0, next_file_stat_ = 0;
};

}  // namespace backstep::record
