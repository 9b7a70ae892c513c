// MappingNames: the file names materialization (materialize.h) gives back
// to the memory that stands for a file mapping. A logged file mmap runs in
// the emu engine's proxy process as anonymous memory at the same address,
// filled with the logged contents (the file is never mapped again: it may
// have changed since), so /proc/PID/maps shows no file there; the record
// phase logged the file /proc/PID/maps named and its offset
// (LoggedSyscall::mapped). These ranges (address -> path, file offset)
// follow the log's calls as the kernel's mappings follow them: a file mmap
// and a shmat add one (over whatever they replace: the segment's name, as
// logged), any other mmap, munmap and shmdt remove what they cover, mremap
// moves (and shrinks or grows) what it remaps.
// mprotect and madvise change no name. Rename() applies them to the proxy's
// maps where the emu engine reads them (EmuOptions::name_mappings), before
// its AddressSpace compares them with the last ones, so that the trace
// names every file mapping, with its offset, as the ptrace engine's
// recording of the same run does, across later splits.
//
// An interval that starts at a snapshot starts with After(log, its first
// call): the names follow from the log's calls before it alone (those
// RestoreSnapshot replays), so every interval and the single pass name the
// same memory alike.
//
// Thread-safety: plain data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "recorder/native/native_log.h"
#include "recorder/tracee.h"

namespace backstep::record {

class MappingNames {
 public:
  // The names after the log's first `count` system calls.
  static MappingNames After(const NativeLog& log, std::size_t count);

  // Follows logged call `call` (mmap, munmap, mremap, shmat and shmdt
  // change names; a failed call or any other changes nothing).
  void Follow(const LoggedSyscall& call);

  // `maps` (sorted, as Tracee::ReadMaps gives them) with every byte a
  // named range covers named as the file at its offset there (the pieces
  // split where the ranges begin and end; the permissions stay).
  void Rename(std::vector<Mapping>* maps) const;

  // A named range, for tests: [start, end) is `path` from `offset`.
  struct NamedRange {
    std::uint64_t start = 0, end = 0;
    std::string path;
    std::uint64_t offset = 0;
    bool operator==(const NamedRange&) const = default;
  };
  std::vector<NamedRange> ranges() const;

 private:
  // Removes the names of [start, end) (the ranges around it cut).
  void Erase(std::uint64_t start, std::uint64_t end);

  std::map<std::uint64_t, NamedRange> ranges_;  // by start, non-overlapping
};

}  // namespace backstep::record
