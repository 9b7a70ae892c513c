#include "packets/host_io.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <vector>

#include "protocol/hex.h"
#include "protocol/response_writer.h"
#include "session/session.h"

namespace backstep::gdbstub {
namespace {

// gdb's File-I/O open flags that ask for writing (O_WRONLY, O_RDWR,
// O_APPEND, O_CREAT, O_TRUNC, O_EXCL).
constexpr std::uint64_t kWriteFlags = 0x1 | 0x2 | 0x8 | 0x200 | 0x400 | 0x800;
// Room in a reply for "F<n>;" and the checksum framing.
constexpr std::size_t kReplyOverhead = 32;

Reply FileError(HostIoError error) {
  std::string out = "F-1,";
  AppendHexNumber(out, static_cast<std::uint64_t>(error));
  return Reply::Packet(std::move(out));
}

Reply FileResult(std::uint64_t result) {
  std::string out = "F";
  AppendHexNumber(out, result);
  return Reply::Packet(std::move(out));
}

Reply FileData(std::string_view data) {
  std::string out = "F";
  AppendHexNumber(out, data.size());
  out += ';';
  AppendEscapedBinary(out, data);
  return Reply::Packet(std::move(out));
}

// Splits "a,b,c" into exactly `count` fields.
template <std::size_t N>
std::optional<std::array<std::string_view, N>> Fields(std::string_view args) {
  std::array<std::string_view, N> out;
  for (std::size_t i = 0; i < N; ++i) {
    std::size_t comma = args.find(',');
    if ((comma == std::string_view::npos) != (i + 1 == N)) return std::nullopt;
    out[i] = args.substr(0, comma);
    args = comma == std::string_view::npos ? std::string_view() : args.substr(comma + 1);
  }
  return out;
}

std::optional<int> ParseFd(std::string_view text) {
  auto fd = ParseHexU64(text);
  if (!fd || *fd > 0x7fffffff) return std::nullopt;
  return static_cast<int>(*fd);
}

void AppendBigEndian(std::string& out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>(value >> (8 * i)));
}

}  // namespace

Reply HandleFileSetFs(Session& session, std::string_view args) {
  auto pid = ParseHexU64(args);
  if (!pid || (*pid != 0 && *pid != session.target().pid()))
    return FileError(HostIoError::kInvalid);
  return FileResult(0);
}

Reply HandleFileOpen(Session& session, std::string_view args) {
  auto fields = Fields<3>(args);
  if (!fields) return FileError(HostIoError::kInvalid);
  auto path = DecodeHexString((*fields)[0]);
  auto flags = ParseHexU64((*fields)[1]);
  if (!path || !flags || !ParseHexU64((*fields)[2])) return FileError(HostIoError::kInvalid);
  if (*flags & kWriteFlags) return FileError(HostIoError::kReadOnly);
  auto fd = session.target().host_files()->Open(*path);
  if (auto* error = std::get_if<HostIoError>(&fd)) return FileError(*error);
  return FileResult(static_cast<std::uint64_t>(std::get<int>(fd)));
}

Reply HandleFilePread(Session& session, std::string_view args) {
  auto fields = Fields<3>(args);
  if (!fields) return FileError(HostIoError::kInvalid);
  auto fd = ParseFd((*fields)[0]);
  auto count = ParseHexU64((*fields)[1]);
  auto offset = ParseHexU64((*fields)[2]);
  if (!fd || !count || !offset) return FileError(HostIoError::kInvalid);
  // Every byte may need escaping: half the packet holds the data for sure.
  const std::size_t budget = session.options().packet_size > 2 * kReplyOverhead
                                 ? (session.options().packet_size - kReplyOverhead) / 2
                                 : 1;
  std::span<std::uint8_t> buffer =
      session.Scratch(static_cast<std::size_t>(std::min<std::uint64_t>(*count, budget)));
  auto n = session.target().host_files()->Pread(*fd, *offset, buffer);
  if (auto* error = std::get_if<HostIoError>(&n)) return FileError(*error);
  return FileData(
      std::string_view(reinterpret_cast<const char*>(buffer.data()), std::get<std::size_t>(n)));
}

Reply HandleFileFstat(Session& session, std::string_view args) {
  auto fd = ParseFd(args);
  if (!fd) return FileError(HostIoError::kInvalid);
  auto stat = session.target().host_files()->Fstat(*fd);
  if (auto* error = std::get_if<HostIoError>(&stat)) return FileError(*error);
  const HostFileStat& st = std::get<HostFileStat>(stat);
  // gdb's struct fio_stat: dev, ino, mode, nlink, uid, gid, rdev (4 bytes
  // each), size, blksize, blocks (8), atime, mtime, ctime (4).
  std::string packed;
  for (std::uint64_t field : {0u, 0u}) AppendBigEndian(packed, field, 4);
  AppendBigEndian(packed, st.mode, 4);
  AppendBigEndian(packed, 1, 4);
  for (int i = 0; i < 3; ++i) AppendBigEndian(packed, 0, 4);
  AppendBigEndian(packed, st.size, 8);
  AppendBigEndian(packed, 4096, 8);
  AppendBigEndian(packed, (st.size + 511) / 512, 8);
  for (int i = 0; i < 3; ++i) AppendBigEndian(packed, st.mtime, 4);
  return FileData(packed);
}

Reply HandleFileClose(Session& session, std::string_view args) {
  auto fd = ParseFd(args);
  if (!fd) return FileError(HostIoError::kInvalid);
  if (auto error = session.target().host_files()->Close(*fd)) return FileError(*error);
  return FileResult(0);
}

Reply HandleFileReadlink(Session& session, std::string_view args) {
  auto path = DecodeHexString(args);
  if (!path) return FileError(HostIoError::kInvalid);
  auto target = session.target().host_files()->Readlink(*path);
  if (auto* error = std::get_if<HostIoError>(&target)) return FileError(*error);
  return FileData(std::get<std::string>(target));
}

Reply HandleFileWrite(Session&, std::string_view) { return FileError(HostIoError::kReadOnly); }

}  // namespace backstep::gdbstub
