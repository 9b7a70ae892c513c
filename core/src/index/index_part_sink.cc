#include "index/index_part_sink.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace backstep::core {
namespace {

constexpr std::size_t kBufferSize = 1 << 20;

class FilePartSink final : public PartSink {
 public:
  FilePartSink(int fd, std::string name) : fd_(fd), name_(std::move(name)) {
    buffer_.reserve(kBufferSize);
  }
  ~FilePartSink() override {
    if (map_ != nullptr) munmap(map_, mapped_);
    close(fd_);
  }
  Status status() const override { return status_; }

  Expected<std::span<std::uint8_t>> Bytes() override {
    Flush();
    BACKSTEP_RETURN_IF_ERROR(status_);
    if (size() == 0) return std::span<std::uint8_t>();
    if (map_ == nullptr) {
      void* p = mmap(nullptr, size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
      if (p == MAP_FAILED) return Fail("cannot map", errno);
      map_ = static_cast<std::uint8_t*>(p);
      mapped_ = size();
      madvise(map_, mapped_, MADV_SEQUENTIAL);
    }
    return std::span<std::uint8_t>(map_, mapped_);
  }

 private:
  void DoWrite(std::span<const std::uint8_t> b) override {
    if (!status_.ok()) return;
    if (buffer_.size() + b.size() > kBufferSize) Flush();
    if (b.size() >= kBufferSize) {
      WriteAll(b);
    } else {
      buffer_.insert(buffer_.end(), b.begin(), b.end());
    }
  }
  void Flush() {
    WriteAll(buffer_);
    buffer_.clear();
  }
  void WriteAll(std::span<const std::uint8_t> b) {
    while (status_.ok() && !b.empty()) {
      const ssize_t n = write(fd_, b.data(), b.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        status_ = Fail("cannot write", n < 0 ? errno : ENOSPC);
        return;
      }
      b = b.subspan(static_cast<std::size_t>(n));
    }
  }
  Status Fail(const char* what, int err) const {
    return Status::IOError(name_ + ": " + what +
                           " the temporary part of the index: " + std::strerror(err));
  }

  int fd_;
  std::string name_;
  std::vector<std::uint8_t> buffer_;
  Status status_;
  std::uint8_t* map_ = nullptr;
  std::size_t mapped_ = 0;
};

}  // namespace

Expected<std::unique_ptr<PartSink>> NewFilePartSink(const std::string& directory) {
  const std::string dir = directory.empty() ? "." : directory;
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    // No O_TMPFILE on this file system: a named file, unlinked at once.
    std::string name = dir + "/.bsidx-part-XXXXXX";
    fd = mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0) {
      return Status::IOError(
          dir + ": cannot create a temporary part of the index: " + std::strerror(errno));
    }
    unlink(name.c_str());
  }
  return std::unique_ptr<PartSink>(new FilePartSink(fd, dir + "/<index part>"));
}

Expected<std::unique_ptr<PartSink>> IndexSink::NewPartSink() const {
  return std::unique_ptr<PartSink>(new MemoryPartSink());
}

Expected<std::unique_ptr<PartSink>> FileIndexSink::NewPartSink() const {
  return NewFilePartSink(std::filesystem::path(file_.destination()).parent_path().string());
}

}  // namespace backstep::core
