#include "backstep/core/byte_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/mapping_registry.h"

namespace backstep::core {
namespace {

class MappedFile final : public ByteSource {
 public:
  MappedFile(std::string name, const std::uint8_t* data, std::size_t size)
      : name_(std::move(name)),
        data_(data),
        size_(size),
        guard_slot_(RegisterMapping(data, size, name_)) {}
  ~MappedFile() override {
    UnregisterMapping(guard_slot_);
    if (size_ != 0) munmap(const_cast<std::uint8_t*>(data_), size_);
  }
  std::span<const std::uint8_t> data() const override { return {data_, size_}; }
  const std::string& name() const override { return name_; }
  void MapInCachedPages() const override;

 private:
  std::string name_;
  const std::uint8_t* data_;
  std::size_t size_;
  int guard_slot_;  // mapping_registry.h
};

class MemoryBuffer final : public ByteSource {
 public:
  MemoryBuffer(std::vector<std::uint8_t> bytes, std::string name)
      : bytes_(std::move(bytes)), name_(std::move(name)) {}
  std::span<const std::uint8_t> data() const override { return bytes_; }
  const std::string& name() const override { return name_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::string name_;
};

// mincore() in chunks (its vector stays small), then MADV_POPULATE_READ on
// each run of cached pages. Any error ends it: it only saves faults.
void MappedFile::MapInCachedPages() const {
#ifdef MADV_POPULATE_READ
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  constexpr std::size_t kChunkPages = 16384;
  std::vector<unsigned char> cached(kChunkPages);
  auto* const base = const_cast<std::uint8_t*>(data_);
  for (std::size_t at = 0; at < size_; at += kChunkPages * page) {
    const std::size_t length = std::min(size_ - at, kChunkPages * page);
    const std::size_t pages = (length + page - 1) / page;
    if (mincore(base + at, length, cached.data()) != 0) return;
    for (std::size_t i = 0; i < pages;) {
      if (!(cached[i] & 1)) {
        ++i;
        continue;
      }
      std::size_t j = i + 1;
      while (j < pages && (cached[j] & 1)) ++j;
      const std::size_t end = std::min(length, j * page);
      if (madvise(base + at + i * page, end - i * page, MADV_POPULATE_READ) != 0) return;
      i = j;
    }
  }
#endif
}

Status Errno(const std::string& path, const char* what) {
  return Status::IOError(path + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

Expected<std::shared_ptr<const ByteSource>> MapFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO (a trace or index path an attacker or a
  // mistake made one) would otherwise wait for a writer before the check
  // below can refuse it. It changes nothing for a regular file.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Errno(path, "cannot open");
  struct stat st;
  if (fstat(fd, &st) != 0) {
    Status s = Errno(path, "cannot stat");
    close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::InvalidArgument(path + ": not a regular file");
  }
  std::size_t size = static_cast<std::size_t>(st.st_size);
  const std::uint8_t* data = nullptr;
  if (size != 0) {
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      Status s = Errno(path, "cannot map");
      close(fd);
      return s;
    }
    data = static_cast<const std::uint8_t*>(p);
  }
  close(fd);
  return std::shared_ptr<const ByteSource>(std::make_shared<MappedFile>(path, data, size));
}

std::shared_ptr<const ByteSource> MemorySource(std::vector<std::uint8_t> bytes, std::string name) {
  return std::make_shared<MemoryBuffer>(std::move(bytes), std::move(name));
}

}  // namespace backstep::core
