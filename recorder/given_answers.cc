#include "recorder/given_answers.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace backstep::record {
namespace {

constexpr std::uint64_t kSysRead = 0, kSysStat = 4, kSysFstat = 5, kSysLstat = 6,
                        kSysGettimeofday = 96, kSysSysinfo = 99, kSysTime = 201,
                        kSysClockGettime = 228, kSysNewfstatat = 262, kSysGetrandom = 318;

// struct stat (x86-64): st_ino, and st_atim, st_mtim, st_ctim.
constexpr std::size_t kStatIno = 8, kStatTimes = 72, kStatTimesSize = 48, kStatSize = 144;

// Whether the tracee's descriptor `fd` is /dev/random or /dev/urandom
// (character devices 1:8 and 1:9), however it was opened.
bool IsRandomDevice(pid_t pid, std::uint64_t fd) {
  struct stat st {};
  if (!StatDescriptor(pid, fd, &st) || !S_ISCHR(st.st_mode)) return false;
  return major(st.st_rdev) == 1 && (minor(st.st_rdev) == 8 || minor(st.st_rdev) == 9);
}

}  // namespace

core::Status GivenAnswers::Apply(Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6],
                                 unsigned long long* result) {
  if (*result > ~std::uint64_t{4095}) return core::Status::Ok();  // failed
  if (nr == kSysGetrandom && next_random_ < inputs_.getrandom.size()) {
    const std::vector<std::uint8_t>& given = inputs_.getrandom[next_random_++];
    const std::size_t n = std::min<std::size_t>(given.size(), *result);
    return tracee.WriteMemory(args[0], std::span(given).first(n));
  }
  if (nr == kSysRead && next_random_read_ < inputs_.random_reads.size() &&
      IsRandomDevice(tracee.pid(), args[0])) {
    const std::vector<std::uint8_t>& given = inputs_.random_reads[next_random_read_++];
    const std::size_t n = std::min<std::size_t>(given.size(), *result);
    return tracee.WriteMemory(args[1], std::span(given).first(n));
  }
  if (nr == kSysStat || nr == kSysFstat || nr == kSysLstat || nr == kSysNewfstatat) {
    return GiveFileStat(tracee, nr, args);
  }
  const bool varies =
      nr == kSysClockGettime || nr == kSysGettimeofday || nr == kSysTime || nr == kSysSysinfo;
  if (!varies || next_answer_ >= inputs_.kernel.size() || inputs_.kernel[next_answer_].nr != nr)
    return core::Status::Ok();
  const KernelAnswer& given = inputs_.kernel[next_answer_++];
  // clock_gettime(clock, out); the others write at their first argument.
  const std::uint64_t out = nr == kSysClockGettime ? args[1] : args[0];
  if (out != 0 && !given.bytes.empty()) {
    if (core::Status s = tracee.WriteMemory(out, given.bytes); !s.ok()) return s;
  }
  *result = given.result;
  return core::Status::Ok();
}

core::Status GivenAnswers::GiveFileStat(Tracee& tracee, std::uint64_t nr,
                                        const std::uint64_t args[6]) {
  if (next_file_stat_ >= inputs_.file_stats.size() || inputs_.file_stats[next_file_stat_].nr != nr)
    return core::Status::Ok();
  const KernelAnswer& given = inputs_.file_stats[next_file_stat_++];
  if (given.bytes.size() != kStatSize) return core::Status::Ok();
  // Only the inode number and the times: the rest (size, mode, device,
  // links) stays the kernel's, as the call's result.
  const std::uint64_t out = nr == kSysNewfstatat ? args[2] : args[1];
  std::uint8_t st[kStatSize];
  if (tracee.ReadMemory(out, st) != kStatSize) return core::Status::Ok();
  std::memcpy(st + kStatIno, given.bytes.data() + kStatIno, 8);
  std::memcpy(st + kStatTimes, given.bytes.data() + kStatTimes, kStatTimesSize);
  return tracee.WriteMemory(out, st);
}

}  // namespace backstep::record
