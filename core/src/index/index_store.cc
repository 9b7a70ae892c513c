#include "index/index_store.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

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
  if (!index.ok()) return {nullptr, "corrupt: " + index.status().message()};
  return {std::move(*index), ""};
}

std::string DefaultCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/backstep";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.cache/backstep";
  }
  return "/tmp/backstep-cache";
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

Expected<OpenedIndex> OpenOrBuildIndex(TraceReader& reader,
                                       std::span<const std::uint8_t> trace_bytes,
                                       const std::string& trace_path, const OpenOptions& options,
                                       const ReaderFactory& more_readers) {
  const std::uint64_t interval =
      options.keyframe_interval ? options.keyframe_interval : kDefaultKeyframeInterval;
  BACKSTEP_ASSIGN_OR_RETURN(IndexIdentity identity, IdentityOf(reader, trace_path, interval));
  if (trace_path.empty()) {
    return BuildInMemory(reader, trace_bytes, identity, options, more_readers);
  }

  const std::string primary = trace_path + ".bsidx";
  const std::string cache = CacheIndexPath(trace_path, options.cache_dir);
  Attempt first = TryOpen(primary, identity, trace_bytes);
  if (first.index) {
    IndexStatus st{primary, true, "", first.index->size_bytes(), 0, ""};
    return OpenedIndex{std::move(first.index), st};
  }
  Attempt second = TryOpen(cache, identity, trace_bytes);
  if (second.index) {
    IndexStatus st{cache, true, "", second.index->size_bytes(), 0, ""};
    return OpenedIndex{std::move(second.index), st};
  }
  const std::string why = first.why == "missing" ? second.why : first.why;
  if (!options.build_index) {
    return Status::NotFound(trace_path + ": no usable index (" + why +
                            ") and building is disabled");
  }
  std::string destination = primary;
  Expected<AtomicFile> file = AtomicFile::Create(primary);
  if (!file.ok()) {
    destination = cache;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(cache).parent_path(), ec);
    file = AtomicFile::Create(cache);
    if (!file.ok()) {
      return file.status().Annotate(trace_path +
                                    ": cannot write the index next to the trace "
                                    "nor in the cache directory");
    }
  }
  FileIndexSink sink(std::move(*file));
  IndexBuildReport report;
  BACKSTEP_RETURN_IF_ERROR(
      BuildIndex(reader, identity, BuildOptionsOf(options, more_readers, &report), sink));
  BACKSTEP_RETURN_IF_ERROR(sink.Commit());
  Attempt built = TryOpen(destination, identity, trace_bytes);
  if (!built.index) {
    return Status::Corruption(destination + ": freshly built index does not validate (" +
                              built.why + ")");
  }
  IndexStatus st{destination, false, why, built.index->size_bytes(), report.parts, report.note};
  return OpenedIndex{std::move(built.index), st};
}

}  // namespace backstep::core
