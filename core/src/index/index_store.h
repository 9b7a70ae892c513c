// OpenOrBuildIndex: finds, validates, reuses or (re)builds a trace's index.
//
// Location: `<trace path>.bsidx` next to the trace; when that directory is
// not writable, `<cache dir>/<trace file name>-<hash of its absolute
// path>.bsidx` (cache dir: OpenOptions::cache_dir, else
// $XDG_CACHE_HOME/backstep, else ~/.cache/backstep, else, with neither
// variable set, /tmp/backstep-cache-<uid>: that one is shared with every
// user of the machine, so it is used only if it is a directory owned by us
// with no access for group or others (see CheckPrivateDir). Both places are
// tried when opening. An index is reused only if ValidateIndex() accepts it (size,
// magics, version, identity: trace size, mtime, hash of its first and last
// 64 KiB, format, keyframe interval; checksum) and its directory parses;
// otherwise it is rebuilt and IndexStatus::rebuilt_why says why
// ("missing", "stale: trace modified", "corrupt: checksum mismatch",
// "truncated", "stale: ...", ...). The new index is written atomically.
//
// With an empty trace path the index is built in memory and never saved.
//
// Building: beside the trace; when that fails (not writable, TRACE.bsidx
// not a regular file, or the write itself fails: full disk, quota) in the
// cache directory, from the first event again. OpenOptions::rebuild_index
// builds even over a valid index, which stays until the new one replaces
// it. One process builds a trace's index at a time (an exclusive flock on
// the trace file); one that waited reuses what the other built.
//
// Thread-safety: reentrant; concurrent builders of one trace take turns
// (above).
#pragma once

#include <memory>
#include <string>

#include "backstep/core/open_options.h"
#include "index/trace_index.h"

namespace backstep::core {

struct OpenedIndex {
  std::unique_ptr<TraceIndex> index;
  IndexStatus status;
};

// `reader` must be at its first event; building consumes it. `trace_bytes`
// (the trace file's bytes, alive as long as the index) resolves data the
// index references in the trace. `more_readers` (may be empty) makes the
// extra readers of a parallel build and the reader that decodes long writes
// the index references by event (TraceIndex::set_reader_factory); without
// it such writes are copied into the index.
Expected<OpenedIndex> OpenOrBuildIndex(TraceReader& reader,
                                       std::span<const std::uint8_t> trace_bytes,
                                       const std::string& trace_path, const OpenOptions& options,
                                       const ReaderFactory& more_readers = {});

// OK if `dir` is a directory (not a symbolic link) owned by the effective
// user with no permission bits for group or others; creates it (mode 0700)
// when missing. Otherwise IOError saying what is wrong: a file
// another user placed there must never be read as our index.
Status CheckPrivateDir(const std::string& dir);

// The cache-directory location of the index of `trace_path`.
std::string CacheIndexPath(const std::string& trace_path, const std::string& cache_dir);

// NOTE: 2048, not 4096: the REVEN reader decodes ~2*10^7 events/s, so a
// seek replaying up to 4096 events costs ~250 us, over the 200 us budget;
// 1024 would halve that but double the keyframes (~2.5 bytes per event on
// traces that churn vector registers), over the 30% size budget.
inline constexpr std::uint64_t kDefaultKeyframeInterval = 2048;

}  // namespace backstep::core
