#include "index/index_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "util/hex.h"

namespace backstep::core {
namespace {

// The checksum reads every page of the mapped index; without this, all of
// them would stay in the process's resident set (file-backed, but counted)
// and resident memory would grow with the index. Called per checksummed
// chunk (16 MiB, page-aligned offsets in a page-aligned mapping). MADV_DONTNEED on this
// read-only file mapping only drops the page-table entries: the next access
// refaults the page from the page cache. Serving then keeps only what the
// queries touch.
void ReleaseResidentPages(std::span<const std::uint8_t> mapped) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(mapped.data());
  if (mapped.empty() || begin % page != 0) return;
  // The last chunk may end mid-page: only whole pages (never beyond the map).
  const std::size_t length = mapped.size() / page * page;
  if (length == 0) return;
  (void)madvise(const_cast<std::uint8_t*>(mapped.data()), length, MADV_DONTNEED);
}

// Prefix of the fallback cache directory (a uid follows): /tmp is shared.
constexpr char kSharedCachePrefix[] = "/tmp/backstep-cache-";

// Holds an exclusive flock on the trace file (opened read-only) for its
// lifetime, so that processes indexing the same trace take turns; without
// the lock (the trace cannot be opened) it does nothing.
class BuildLock {
 public:
  explicit BuildLock(const std::string& trace_path)
      : fd_(open(trace_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) {
    if (fd_ < 0) return;
    if (flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    waited_ = true;
    while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~BuildLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;
  // True if another process held the lock when we asked.
  bool waited() const { return waited_; }

 private:
  int fd_;
  bool waited_ = false;
};

struct Attempt {
  std::unique_ptr<TraceIndex> index;
  std::string why;  // empty when `index` is set
};

Attempt TryOpen(const std::string& path, const IndexIdentity& identity,
                std::span<const std::uint8_t> trace_bytes) {
  Expected<std::shared_ptr<const ByteSource>> mapped = MapFile(path);
  if (!mapped.ok()) return {nullptr, "missing"};
  std::shared_ptr<const ByteSource> source = *mapped;
  std::string why = ValidateIndex(source->data(), identity, ReleaseResidentPages);
  if (!why.empty()) return {nullptr, why};
  auto index = TraceIndex::Open(source, source->data(), trace_bytes);
  if (!index.ok()) return {nullptr, "corrupt: " + index.status().message() + " (" + path + ")"};
  return {std::move(*index), ""};
}

std::string DefaultCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/backstep";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.cache/backstep";
  }
  return kSharedCachePrefix + std::to_string(geteuid());
}

Expected<IndexIdentity> IdentityOf(const TraceReader& reader, const std::string& path,
                                   std::uint64_t interval) {
  IndexIdentity id;
  id.format = reader.header().format;
  id.keyframe_interval = interval;
  id.arch_signature = ArchSignature(*reader.header().arch);
  id.trace_hash = TraceHash(reader.source().data());
  id.trace_size = reader.source().size();
  if (!path.empty()) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return Status::IOError(path + ": cannot stat trace: " + std::strerror(errno));
    }
    id.trace_size = static_cast<std::uint64_t>(st.st_size);
    id.trace_mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  return id;
}

IndexBuildOptions BuildOptionsOf(const OpenOptions& options, const ReaderFactory& more_readers,
                                 IndexBuildReport* report) {
  IndexBuildOptions b;
  b.parts = options.index_parts;
  b.new_reader = more_readers;
  b.report = report;
  if (options.index_memory_budget) b.memory_budget = options.index_memory_budget;
  if (options.index_block_entries) b.block_entries = options.index_block_entries;
  if (options.index_snapshot_blocks) b.snapshot_blocks = options.index_snapshot_blocks;
  b.progress = options.progress;
  return b;
}

Expected<OpenedIndex> BuildInMemory(TraceReader& reader, std::span<const std::uint8_t> trace_bytes,
                                    const IndexIdentity& identity, const OpenOptions& options,
                                    const ReaderFactory& more_readers) {
  VectorIndexSink sink;
  IndexBuildReport report;
  BACKSTEP_RETURN_IF_ERROR(
      BuildIndex(reader, identity, BuildOptionsOf(options, more_readers, &report), sink));
  auto bytes = std::make_shared<std::vector<std::uint8_t>>(std::move(sink.bytes()));
  std::span<const std::uint8_t> view(*bytes);
  BACKSTEP_ASSIGN_OR_RETURN(auto index, TraceIndex::Open(bytes, view, trace_bytes));
  OpenedIndex out{std::move(index),
                  IndexStatus{"", false, "in memory", view.size(), report.parts, report.note}};
  return out;
}

}  // namespace

Status CheckPrivateDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::IOError(dir + ": cannot create the cache directory: " + std::strerror(errno));
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    return Status::IOError(dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::IOError(dir +
                           ": not a directory (a link or a file put there): "
                           "not used as the index cache");
  }
  if (st.st_uid != geteuid()) {
    return Status::IOError(dir + ": owned by uid " + std::to_string(st.st_uid) +
                           ", not by us: not used as the index cache");
  }
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return Status::IOError(dir + ": open to other users (mode " + mode +
                           "): not used as the index cache");
  }
  return Status();
}

std::string CacheIndexPath(const std::string& trace_path, const std::string& cache_dir) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(trace_path, ec);
  if (ec) abs = trace_path;
  const std::string text = abs.lexically_normal().string();
  const std::uint64_t h =
      Hash64::Of({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  const std::string dir = cache_dir.empty() ? DefaultCacheDir() : cache_dir;
  return dir + "/" + abs.filename().string() + "-" + HexPadded(h, 16).substr(2) + ".bsidx";
}

// OpenOrBuildIndex without the reader factory set on the index.
static Expected<OpenedIndex> FindOrBuildIndex(TraceReader& reader,
                                              std::span<const std::uint8_t> trace_bytes,
                                              const std::string& trace_path,
                                              const OpenOptions& options,
                                              const ReaderFactory& more_readers) {
  const std::uint64_t interval =
      options.keyframe_interval ? options.keyframe_interval : kDefaultKeyframeInterval;
  BACKSTEP_ASSIGN_OR_RETURN(IndexIdentity identity, IdentityOf(reader, trace_path, interval));
  if (trace_path.empty()) {
    return BuildInMemory(reader, trace_bytes, identity, options, more_readers);
  }

  const std::string primary = trace_path + ".bsidx";
  const std::string cache = CacheIndexPath(trace_path, options.cache_dir);
  // The shared fallback in /tmp is used only when it is ours alone.
  const std::string cache_dir = std::filesystem::path(cache).parent_path().string();
  const Status cache_usable =
      cache_dir.rfind(kSharedCachePrefix, 0) == 0 ? CheckPrivateDir(cache_dir) : Status();
  // The first valid index of primary, then cache; `why` says why none was.
  auto reuse = [&](std::string* why) -> std::optional<OpenedIndex> {
    for (const std::string& path : {primary, cache}) {
      if (path == cache && !cache_usable.ok()) continue;
      Attempt attempt = TryOpen(path, identity, trace_bytes);
      if (attempt.index) {
        IndexStatus st{path, true, "", attempt.index->size_bytes(), 0, ""};
        return OpenedIndex{std::move(attempt.index), st};
      }
      if (why->empty() || *why == "missing") *why = attempt.why;
    }
    return std::nullopt;
  };
  std::string why = "rebuild asked";
  if (!options.rebuild_index) {
    why.clear();
    if (auto found = reuse(&why)) return std::move(*found);
  }
  if (!options.build_index) {
    return Status::NotFound(trace_path + ": no usable index (" + why +
                            ") and building is disabled");
  }
  // One builder per trace at a time: a second process waits here, then
  // finds the first one's index instead of building all of it again.
  BuildLock lock(trace_path);
  if (lock.waited() && !options.rebuild_index) {
    std::string ignored;
    if (auto found = reuse(&ignored)) return std::move(*found);
  }
  const ReaderPosition start = reader.Tell();
  IndexBuildReport report;
  auto build_at = [&](const std::string& path) -> Status {
    BACKSTEP_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path, /*allow_special=*/false));
    FileIndexSink sink(std::move(file));
    report = IndexBuildReport();
    BACKSTEP_RETURN_IF_ERROR(
        BuildIndex(reader, identity, BuildOptionsOf(options, more_readers, &report), sink));
    // The old index (if any) is replaced only now, by a complete one.
    return sink.Commit();
  };
  std::string destination = primary;
  if (Status beside = build_at(primary); !beside.ok()) {
    // Not writable, or the write failed (full disk, quota): the cache
    // directory, from the first event again. Reader errors are final.
    if (beside.code() != StatusCode::kIOError) return beside;
    const std::string failed = trace_path + ": cannot write the index next to the trace (" +
                               beside.message() + ") nor in the cache directory";
    if (!cache_usable.ok()) return cache_usable.Annotate(failed);
    std::error_code ec;
    std::filesystem::create_directories(cache_dir, ec);
    if (ec) {
      return Status::IOError(cache_dir + ": cannot create the cache directory: " + ec.message())
          .Annotate(failed);
    }
    BACKSTEP_RETURN_IF_ERROR(reader.Seek(start));
    if (Status cached = build_at(cache); !cached.ok()) return cached.Annotate(failed);
    destination = cache;
  }
  Attempt built = TryOpen(destination, identity, trace_bytes);
  if (!built.index) {
    return Status::Corruption(destination + ": freshly built index does not validate (" +
                              built.why + ")");
  }
  IndexStatus st{destination, false, why, built.index->size_bytes(), report.parts, report.note};
  return OpenedIndex{std::move(built.index), st};
}

Expected<OpenedIndex> OpenOrBuildIndex(TraceReader& reader,
                                       std::span<const std::uint8_t> trace_bytes,
                                       const std::string& trace_path, const OpenOptions& options,
                                       const ReaderFactory& more_readers) {
  BACKSTEP_ASSIGN_OR_RETURN(
      OpenedIndex opened, FindOrBuildIndex(reader, trace_bytes, trace_path, options, more_readers));
  // Event-referenced entries (built only with more_readers) decode with it.
  if (more_readers) opened.index->set_reader_factory(more_readers);
  return opened;
}

}  // namespace backstep::core
