// The inputs another recording got, given to this one (EmuOptions): what
// differs between two runs of the same program although nothing in the
// program differs (random bytes, the clock, files' identities and times),
// so that the engine cross-check (emu_crosscheck_test.cc) can compare the
// two engines' traces position by position. Each answer is written into
// the tracee before its memory is captured, so the trace records it as the
// kernel's.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "recorder/emu/emu_session.h"

namespace backstep::record {
namespace {

// struct stat (x86-64): st_ino, and st_atim, st_mtim, st_ctim.
constexpr std::size_t kStatIno = 8, kStatTimes = 72, kStatTimesSize = 48, kStatSize = 144;

// Whether the tracee's descriptor `fd` is /dev/random or /dev/urandom
// (character devices 1:8 and 1:9), however it was opened.
bool IsRandomDevice(pid_t pid, std::uint64_t fd) {
  struct stat st {};
  const std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  if (stat(link.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return false;
  return major(st.st_rdev) == 1 && (minor(st.st_rdev) == 8 || minor(st.st_rdev) == 9);
}

}  // namespace

core::Status EmuSession::GiveAnswers(std::uint64_t nr, const std::uint64_t* args,
                                     user_regs_struct* after) {
  if (nr == kSysGetrandom && next_random_ < emu_.getrandom.size()) {
    const std::vector<std::uint8_t>& given = emu_.getrandom[next_random_++];
    const std::size_t n = std::min<std::size_t>(given.size(), after->rax);
    return tracee_.WriteMemory(args[0], std::span(given).first(n));
  }
  if (nr == kSysRead && next_random_read_ < emu_.random_reads.size() &&
      IsRandomDevice(tracee_.pid(), args[0])) {
    const std::vector<std::uint8_t>& given = emu_.random_reads[next_random_read_++];
    const std::size_t n = std::min<std::size_t>(given.size(), after->rax);
    return tracee_.WriteMemory(args[1], std::span(given).first(n));
  }
  const bool varies =
      nr == kSysClockGettime || nr == kSysGettimeofday || nr == kSysTime || nr == kSysSysinfo;
  if (varies && next_answer_ < emu_.kernel_answers.size() &&
      emu_.kernel_answers[next_answer_].nr == nr) {
    const EmuOptions::KernelAnswer& given = emu_.kernel_answers[next_answer_++];
    const std::uint64_t out = nr == kSysClockGettime ? args[1] : args[0];
    if (out != 0 && !given.bytes.empty()) {
      if (core::Status s = tracee_.WriteMemory(out, given.bytes); !s.ok()) return s;
    }
    after->rax = given.result;
    return core::Status::Ok();
  }
  const bool stats = nr == kSysStat || nr == kSysFstat || nr == kSysLstat || nr == kSysNewfstatat;
  if (stats && next_file_stat_ < emu_.file_stats.size() &&
      emu_.file_stats[next_file_stat_].nr == nr) {
    const EmuOptions::KernelAnswer& given = emu_.file_stats[next_file_stat_++];
    if (given.bytes.size() != kStatSize) return core::Status::Ok();
    // Only the inode number and the times: the rest (size, mode, device,
    // links) stays the kernel's, as the call's result.
    const std::uint64_t out = nr == kSysNewfstatat ? args[2] : args[1];
    std::uint8_t st[kStatSize];
    if (tracee_.ReadMemory(out, st) != kStatSize) return core::Status::Ok();
    std::memcpy(st + kStatIno, given.bytes.data() + kStatIno, 8);
    std::memcpy(st + kStatTimes, given.bytes.data() + kStatTimes, kStatTimesSize);
    return tracee_.WriteMemory(out, st);
  }
  return core::Status::Ok();
}

void EmuSession::GiveQuietSignals(core::Address pc) {
  while (next_quiet_signal_ < emu_.quiet_signals.size() &&
         emu_.quiet_signals[next_quiet_signal_].after == result_.instructions) {
    // As the ptrace engine records a signal without effect: no registers,
    // no writes, the program goes on at `pc`.
    const EmuOptions::QuietSignal& given = emu_.quiet_signals[next_quiet_signal_++];
    ++result_.signals;
    sink_.OnSignal({given.signal, pc, given.siginfo, {}, {}});
  }
}

}  // namespace backstep::record
