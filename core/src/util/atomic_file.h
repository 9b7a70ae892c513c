// AtomicFile: writes a file under a temporary name and renames it into place.
//
// Everything backstep writes (indexes, converted traces, exports) goes
// through this: the temporary file lives in the destination's directory,
// unnamed (O_TMPFILE) where the file system allows it, else as
// `<dest>.tmp-<pid>-<n>`; Commit() flushes (fsync), gives it its final name
// (over the destination) and fsyncs the directory. If the object is
// destroyed without Commit(), the temporary file is removed; an unnamed one
// disappears even when the process is killed, and Create() removes the
// named leftovers of processes that no longer exist. A crash or a full disk
// therefore never leaves a partial file under the final name.
//
// What the destination already is decides how it is written (it is never
// replaced by something else):
//   * missing or a regular file: atomically, as above;
//   * a symbolic link: its target, by these same rules (the link stays);
//   * a character device or a FIFO (/dev/null, a named pipe) when
//     `allow_special` (the default): opened for writing at Create(); the
//     bytes are kept in an unnamed temporary file (so WriteAt works) and
//     Commit() copies them into the device in order (nothing to rename);
//   * anything else (directory, block device, socket, or a device/FIFO
//     without `allow_special`): IOError, nothing touched.
//
// Writes are buffered; errors (ENOSPC, EIO) are remembered and reported by
// Commit() or status(), naming the file.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "backstep/core/expected.h"

namespace backstep::core {

class AtomicFile {
 public:
  // Creates the temporary file (or opens the device, see above). IOError if
  // the directory is not writable or the destination cannot be written.
  static Expected<AtomicFile> Create(const std::string& destination, bool allow_special = true);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  void Write(std::span<const std::uint8_t> bytes);
  void Write(std::string_view text);
  void WriteU8(std::uint8_t v) { Write(std::span<const std::uint8_t>(&v, 1)); }
  void WriteLe(std::uint64_t v, int bytes);  // little-endian, 1..8 bytes
  // Appends the first `size` bytes of the open file `fd` (from its offset
  // 0; its own offset is not used), by copy_file_range where the kernel
  // can (no copy through this process), else read and write. An error
  // (`fd` shorter than `size` included) is remembered as Write's are.
  void AppendFrom(int fd, std::uint64_t size);
  // Overwrites already written bytes at `offset` (for patched headers).
  void WriteAt(std::uint64_t offset, std::span<const std::uint8_t> bytes);
  // Bytes written so far.
  std::uint64_t size() const { return size_; }
  Status status() const { return status_; }

  // Flushes, fsyncs and renames into place.
  Status Commit();

  const std::string& destination() const { return destination_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFile() = default;
  void Fail(const char* what);
  // Commit() of a device or FIFO destination.
  Status CopyToDevice();

  std::string destination_;
  std::string temp_path_;  // empty: unnamed (O_TMPFILE) or direct
  int device_fd_ = -1;     // a device or FIFO: Commit() copies file_ into it
  std::FILE* file_ = nullptr;
  std::uint64_t size_ = 0;
  Status status_;
};

}  // namespace backstep::core
