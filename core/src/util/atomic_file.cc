#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace backstep::core {
namespace {
std::atomic<unsigned> g_counter{0};

std::string DirectoryOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
}  // namespace

Expected<AtomicFile> AtomicFile::Create(const std::string& destination) {
  AtomicFile f;
  f.destination_ = destination;
  f.temp_path_ = destination + ".tmp-" + std::to_string(getpid()) + "-" +
                 std::to_string(g_counter.fetch_add(1));
  int fd = open(f.temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IOError(destination + ": cannot create temporary file: " + std::strerror(errno));
  }
  f.file_ = fdopen(fd, "wb");
  if (!f.file_) {
    close(fd);
    unlink(f.temp_path_.c_str());
    return Status::IOError(destination + ": fdopen failed: " + std::strerror(errno));
  }
  std::setvbuf(f.file_, nullptr, _IOFBF, 1 << 20);
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept { *this = std::move(o); }

AtomicFile& AtomicFile::operator=(AtomicFile&& o) noexcept {
  if (this != &o) {
    if (file_) {
      std::fclose(file_);
      unlink(temp_path_.c_str());
    }
    destination_ = std::move(o.destination_);
    temp_path_ = std::move(o.temp_path_);
    file_ = o.file_;
    size_ = o.size_;
    status_ = o.status_;
    o.file_ = nullptr;
  }
  return *this;
}

AtomicFile::~AtomicFile() {
  if (file_) {
    std::fclose(file_);
    unlink(temp_path_.c_str());
  }
}

void AtomicFile::Fail(const char* what) {
  if (status_.ok()) {
    status_ = Status::IOError(destination_ + ": " + what + ": " + std::strerror(errno));
  }
}

void AtomicFile::Write(std::span<const std::uint8_t> bytes) {
  if (!status_.ok() || !file_ || bytes.empty()) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) Fail("write failed");
  size_ += bytes.size();
}

void AtomicFile::Write(std::string_view text) {
  Write(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()),
                                      text.size()));
}

void AtomicFile::WriteLe(std::uint64_t v, int bytes) {
  std::uint8_t buf[8];
  for (int i = 0; i < bytes; ++i) buf[i] = static_cast<std::uint8_t>(v >> (8 * i));
  Write(std::span<const std::uint8_t>(buf, static_cast<std::size_t>(bytes)));
}

void AtomicFile::WriteAt(std::uint64_t offset, std::span<const std::uint8_t> bytes) {
  if (!status_.ok() || !file_) return;
  long here = std::ftell(file_);
  if (std::fseek(file_, static_cast<long>(offset), SEEK_SET) != 0) return Fail("seek failed");
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) Fail("write failed");
  if (std::fseek(file_, here, SEEK_SET) != 0) Fail("seek failed");
}

Status AtomicFile::Commit() {
  if (!file_) return Status::IOError(destination_ + ": already committed");
  if (std::fflush(file_) != 0) Fail("flush failed");
  if (status_.ok() && fsync(fileno(file_)) != 0) Fail("fsync failed");
  if (std::fclose(file_) != 0) Fail("close failed");
  file_ = nullptr;
  if (!status_.ok()) {
    unlink(temp_path_.c_str());
    return status_;
  }
  if (rename(temp_path_.c_str(), destination_.c_str()) != 0) {
    Fail("rename failed");
    unlink(temp_path_.c_str());
    return status_;
  }
  int dir = open(DirectoryOf(destination_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
  return Status();
}

}  // namespace backstep::core
