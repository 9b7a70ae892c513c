#include "util/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
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

std::string TempName(const std::string& destination) {
  return destination + ".tmp-" + std::to_string(getpid()) + "-" +
         std::to_string(g_counter.fetch_add(1));
}

// The final target of `path` when it is a symbolic link (relative links
// resolved against their directory), else `path`. ELOOP past 40 links.
Expected<std::string> FollowLinks(std::string path) {
  for (int depth = 0; depth < 40; ++depth) {
    char target[4096];
    const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n < 0) return path;  // not a link (or missing): write it
    target[n] = 0;
    path = target[0] == '/' ? std::string(target) : DirectoryOf(path) + "/" + target;
  }
  return Status::IOError(path + ": too many levels of symbolic links");
}

// Removes `<destination>.tmp-<pid>-<n>` files of processes that no longer
// exist (a build killed before it could clean up).
void RemoveDeadTemps(const std::string& destination) {
  const std::string dir = DirectoryOf(destination);
  const std::string base = destination.substr(destination.rfind('/') + 1) + ".tmp-";
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (const dirent* entry = readdir(d)) {
    const std::string_view name(entry->d_name);
    if (name.substr(0, base.size()) != base) continue;
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name + base.size(), &end, 10);
    if (pid <= 0 || *end != '-') continue;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      unlinkat(dirfd(d), entry->d_name, 0);
    }
  }
  closedir(d);
}
}  // namespace

Expected<AtomicFile> AtomicFile::Create(const std::string& requested, bool allow_special) {
  BACKSTEP_ASSIGN_OR_RETURN(const std::string destination, FollowLinks(requested));
  AtomicFile f;
  f.destination_ = destination;
  int fd = -1;
  struct stat st;
  if (stat(destination.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // Never replaced: a device or pipe is written as a stream, the rest refused.
    if (!allow_special || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
      return Status::IOError(
          requested + ": exists and is not a regular file " +
          (S_ISDIR(st.st_mode) ? "(a directory)" : "(a device, pipe or socket)") +
          ": not replaced");
    }
    f.device_fd_ = open(destination.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (f.device_fd_ < 0) {
      return Status::IOError(requested + ": cannot open: " + std::strerror(errno));
    }
    fd = open(P_tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);  // the spool
    if (fd < 0) {
      return Status::IOError(requested + ": cannot create a temporary file in " P_tmpdir ": " +
                             std::strerror(errno));
    }
  } else {
    RemoveDeadTemps(destination);
    // Unnamed: nothing is left behind whatever happens to the process.
    // Commit names it through /proc/self/fd.
    if (access("/proc/self/fd", X_OK) == 0) {
      fd = open(DirectoryOf(destination).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    }
    if (fd < 0) {
      f.temp_path_ = TempName(destination);
      fd = open(f.temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (fd < 0) {
      return Status::IOError(destination +
                             ": cannot create temporary file: " + std::strerror(errno));
    }
  }
  f.file_ = fdopen(fd, f.device_fd_ >= 0 ? "w+b" : "wb");
  if (!f.file_) {
    close(fd);
    if (!f.temp_path_.empty()) unlink(f.temp_path_.c_str());
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
      if (!temp_path_.empty()) unlink(temp_path_.c_str());
    }
    destination_ = std::move(o.destination_);
    temp_path_ = std::move(o.temp_path_);
    if (device_fd_ >= 0) ::close(device_fd_);
    device_fd_ = o.device_fd_;
    o.device_fd_ = -1;
    file_ = o.file_;
    size_ = o.size_;
    status_ = o.status_;
    o.file_ = nullptr;
  }
  return *this;
}

AtomicFile::~AtomicFile() {
  if (device_fd_ >= 0) ::close(device_fd_);
  if (file_) {
    std::fclose(file_);
    if (!temp_path_.empty()) unlink(temp_path_.c_str());
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

void AtomicFile::AppendFrom(int fd, std::uint64_t size) {
  if (!status_.ok() || !file_ || size == 0) return;
  if (std::fflush(file_) != 0) return Fail("write failed");
  const int out = fileno(file_);
  off_t in = 0;
  bool copy_range = true;
  char buffer[1 << 16];
  for (std::uint64_t done = 0; done < size;) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(size - done, std::uint64_t{1} << 30));
    ssize_t n = -1;
    if (copy_range) {
      n = copy_file_range(fd, &in, out, nullptr, want, 0);
      if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
        copy_range = false;  // another file system, or no support: copy it here
        continue;
      }
    } else {
      n = pread(fd, buffer, std::min(want, sizeof buffer), in);
      for (ssize_t put = 0; n > 0 && put < n;) {
        const ssize_t w = ::write(out, buffer + put, static_cast<std::size_t>(n - put));
        if (w > 0) {
          put += w;
        } else if (!(w < 0 && errno == EINTR)) {
          return Fail("write failed");
        }
      }
      if (n > 0) in += n;
    }
    if (n > 0) {
      done += static_cast<std::uint64_t>(n);
    } else if (n == 0) {
      errno = EIO;
      return Fail("the file to append is shorter than expected");
    } else if (errno != EINTR) {
      return Fail("append failed");
    }
  }
  // The stream's idea of the position follows the descriptor's again.
  if (std::fseek(file_, 0, SEEK_END) != 0) return Fail("seek failed");
  size_ += size;
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

Status AtomicFile::CopyToDevice() {
  char buffer[1 << 16];
  if (status_.ok() && std::fseek(file_, 0, SEEK_SET) != 0) Fail("seek failed");
  while (status_.ok()) {
    const std::size_t n = std::fread(buffer, 1, sizeof(buffer), file_);
    if (n == 0) break;
    for (std::size_t done = 0; done < n && status_.ok();) {
      const ssize_t w = ::write(device_fd_, buffer + done, n - done);
      if (w > 0) {
        done += static_cast<std::size_t>(w);
      } else if (!(w < 0 && errno == EINTR)) {
        Fail("write failed");
      }
    }
  }
  std::fclose(file_);
  file_ = nullptr;
  if (::close(device_fd_) != 0) Fail("close failed");
  device_fd_ = -1;
  return status_;
}

Status AtomicFile::Commit() {
  if (!file_) return Status::IOError(destination_ + ": already committed");
  if (std::fflush(file_) != 0) Fail("flush failed");
  if (device_fd_ >= 0) return CopyToDevice();
  if (status_.ok() && fsync(fileno(file_)) != 0) Fail("fsync failed");
  if (status_.ok() && temp_path_.empty()) {
    // Unnamed: link it under a temporary name, then rename that over the
    // destination (linkat cannot replace an existing file).
    const std::string fd_path = "/proc/self/fd/" + std::to_string(fileno(file_));
    temp_path_ = TempName(destination_);
    if (linkat(AT_FDCWD, fd_path.c_str(), AT_FDCWD, temp_path_.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      Fail("cannot name the temporary file");
      temp_path_.clear();
    }
  }
  if (std::fclose(file_) != 0) Fail("close failed");
  file_ = nullptr;
  if (!status_.ok()) {
    if (!temp_path_.empty()) unlink(temp_path_.c_str());
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
