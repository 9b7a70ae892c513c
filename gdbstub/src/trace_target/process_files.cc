#include "trace_target/process_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "backstep/gdbstub/process_image.h"

namespace backstep::gdbstub {
namespace {

// Longer paths are refused before touching the file system (PATH_MAX).
constexpr std::size_t kMaxPath = 4096;

std::optional<std::uint64_t> ParseDecimal(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string_view Basename(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string JoinedStrings(const std::vector<std::string>& strings) {
  std::string out;
  for (const std::string& s : strings) {
    out += s;
    out.push_back('\0');
  }
  return out;
}

// Mapping permissions the format did not record read as rwx: the range
// holds known bytes, and clients skip what they think is unreadable.
std::string ProcPermissions(const core::Mapping& m) {
  return (m.permissions.size() == 3 ? m.permissions : std::string("rwx")) + "p";
}

}  // namespace

ProcessFiles::ProcessFiles(std::shared_ptr<const core::Trace> trace,
                           const core::MappingTimeline* mappings, Process process, Now now)
    : trace_(std::move(trace)),
      mappings_(mappings),
      process_(std::move(process)),
      now_(std::move(now)) {}

ProcessFiles::~ProcessFiles() {
  for (std::optional<OpenFile>& file : files_) {
    if (file && std::holds_alternative<int>(file->content)) ::close(std::get<int>(file->content));
  }
}

std::string ProcessFiles::MapsText(const std::vector<core::Mapping>& mappings) {
  std::string out;
  char line[128];
  for (const core::Mapping& m : mappings) {
    int n = std::snprintf(line, sizeof line, "%08llx-%08llx %s %08llx 00:00 0",
                          static_cast<unsigned long long>(m.start),
                          static_cast<unsigned long long>(m.end()), ProcPermissions(m).c_str(),
                          static_cast<unsigned long long>(m.file_offset));
    out.append(line, static_cast<std::size_t>(std::max(n, 0)));
    if (!m.name.empty()) {
      // The kernel pads the name to column 74 (seq_pad after 72 characters).
      if (n < 72) out.append(static_cast<std::size_t>(72 - n), ' ');
      out += ' ';
      out += m.name;
    }
    out += '\n';
  }
  return out;
}

std::string ProcessFiles::HostPath(std::string_view path) const {
  std::string sysroot = process_.sysroot;
  while (!sysroot.empty() && sysroot.back() == '/') sysroot.pop_back();
  return sysroot + std::string(path);
}

std::vector<std::string> ProcessFiles::ServedFiles() {
  std::vector<std::string> names;
  if (std::string exe = ExePath(); !exe.empty()) names.push_back(std::move(exe));
  if (auto maps = mappings_->At(now_.position()); maps.ok()) {
    for (const core::Mapping& m : *maps) {
      if (!m.name.empty() && m.name[0] == '/') names.push_back(m.name);
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::vector<std::string> out;
  for (const std::string& name : names) {
    std::error_code error;
    auto canonical = std::filesystem::canonical(HostPath(name), error);
    if (!error) out.push_back(canonical.string());
  }
  return out;
}

HostIoResult<int> ProcessFiles::OpenServedFile(std::string_view path) {
  std::error_code error;
  auto canonical = std::filesystem::canonical(HostPath(path), error);
  if (error) return HostIoError::kNoEntry;
  std::vector<std::string> served = ServedFiles();
  if (std::find(served.begin(), served.end(), canonical.string()) == served.end()) {
    return HostIoError::kAccess;
  }
  int fd = ::open(canonical.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return HostIoError::kAccess;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return HostIoError::kAccess;
  }
  return fd;
}

const std::string& ProcessFiles::InitialStrings(bool environment) {
  if (!argv_) {
    auto strings = RecordedInitialStrings(*trace_);
    argv_ = strings.ok() ? JoinedStrings(strings->argv) : std::string();
    envp_ = strings.ok() ? JoinedStrings(strings->envp) : std::string();
  }
  return environment ? *envp_ : *argv_;
}

HostIoResult<std::string> ProcessFiles::ProcFile(std::string_view rest) {
  if (rest.starts_with("task/")) {
    std::string_view task = rest.substr(5);
    std::size_t slash = task.find('/');
    auto tid = ParseDecimal(task.substr(0, slash));
    if (!tid || slash == std::string_view::npos) return HostIoError::kNoEntry;
    std::vector<core::ThreadId> threads = now_.threads();
    // The task ids are the threads' ids as the client sees them (p1.TID).
    bool exists = std::any_of(threads.begin(), threads.end(),
                              [&](core::ThreadId t) { return t.value == *tid; });
    if (!exists) return HostIoError::kNoEntry;
    rest = task.substr(slash + 1);
    if (rest != "maps") return HostIoError::kNoEntry;
  }
  if (rest == "maps") {
    auto maps = mappings_->At(now_.position());
    if (!maps.ok()) return HostIoError::kAccess;
    return MapsText(*maps);
  }
  if (rest == "cmdline") return InitialStrings(false);
  if (rest == "environ") return InitialStrings(true);
  if (rest == "auxv") {
    const std::vector<std::uint8_t> auxv = Auxv();
    return std::string(auxv.begin(), auxv.end());
  }
  if (rest == "status") {
    std::string name(Basename(ExePath()).substr(0, 15));
    std::string pid = std::to_string(process_.pid);
    return "Name:\t" + name + "\nState:\tt (tracing stop)\nTgid:\t" + pid + "\nPid:\t" + pid +
           "\nPPid:\t0\nTracerPid:\t0\nThreads:\t" + std::to_string(now_.threads().size()) + "\n";
  }
  return HostIoError::kNoEntry;
}

HostIoResult<int> ProcessFiles::Install(OpenFile file) {
  for (std::size_t fd = 0; fd < files_.size(); ++fd) {
    if (!files_[fd]) {
      files_[fd] = std::move(file);
      return static_cast<int>(fd);
    }
  }
  if (files_.size() >= kMaxOpenFiles) {
    if (std::holds_alternative<int>(file.content)) ::close(std::get<int>(file.content));
    return HostIoError::kTooMany;
  }
  files_.push_back(std::move(file));
  return static_cast<int>(files_.size() - 1);
}

ProcessFiles::OpenFile* ProcessFiles::Find(int fd) {
  if (fd < 0 || static_cast<std::size_t>(fd) >= files_.size() || !files_[fd]) return nullptr;
  return &*files_[fd];
}

HostIoResult<int> ProcessFiles::Open(std::string_view path) {
  if (path.size() > kMaxPath) return HostIoError::kNameTooLong;
  if (path.find('\0') != std::string_view::npos) return HostIoError::kInvalid;
  std::string exe;  // what `path` views for /proc/PID/exe
  if (path.starts_with("/proc/")) {
    std::string_view rest = path.substr(6);
    std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return HostIoError::kNoEntry;
    std::string_view pid = rest.substr(0, slash);
    if (pid != "self" && ParseDecimal(pid) != process_.pid) return HostIoError::kNoEntry;
    rest = rest.substr(slash + 1);
    if (rest == "exe") {
      exe = ExePath();
      if (exe.empty()) return HostIoError::kNoEntry;
      path = exe;
    } else {
      auto content = ProcFile(rest);
      if (auto* error = std::get_if<HostIoError>(&content)) return *error;
      return Install({std::move(std::get<std::string>(content))});
    }
  }
  if (path.empty() || path[0] != '/') return HostIoError::kAccess;
  auto fd = OpenServedFile(path);
  if (auto* error = std::get_if<HostIoError>(&fd)) return *error;
  return Install({std::get<int>(fd)});
}

HostIoResult<std::size_t> ProcessFiles::Pread(int fd, std::uint64_t offset,
                                              std::span<std::uint8_t> out) {
  OpenFile* file = Find(fd);
  if (file == nullptr) return HostIoError::kBadFd;
  if (const auto* text = std::get_if<std::string>(&file->content)) {
    if (offset >= text->size()) return std::size_t{0};
    std::size_t n = std::min<std::size_t>(out.size(), text->size() - offset);
    std::copy_n(text->data() + offset, n, out.data());
    return n;
  }
  if (offset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) {
    return std::size_t{0};
  }
  ssize_t n =
      ::pread(std::get<int>(file->content), out.data(), out.size(), static_cast<off_t>(offset));
  if (n < 0) return HostIoError::kInvalid;
  return static_cast<std::size_t>(n);
}

HostIoResult<HostFileStat> ProcessFiles::Fstat(int fd) {
  OpenFile* file = Find(fd);
  if (file == nullptr) return HostIoError::kBadFd;
  HostFileStat stat;
  stat.mode = S_IFREG | 0444;
  if (const auto* text = std::get_if<std::string>(&file->content)) {
    stat.size = text->size();
    return stat;
  }
  struct stat st;
  if (::fstat(std::get<int>(file->content), &st) != 0) return HostIoError::kBadFd;
  stat.size = static_cast<std::uint64_t>(st.st_size);
  stat.mtime = static_cast<std::uint32_t>(st.st_mtime);
  return stat;
}

std::optional<HostIoError> ProcessFiles::Close(int fd) {
  OpenFile* file = Find(fd);
  if (file == nullptr) return HostIoError::kBadFd;
  if (std::holds_alternative<int>(file->content)) ::close(std::get<int>(file->content));
  files_[fd].reset();
  return std::nullopt;
}

HostIoResult<std::string> ProcessFiles::Readlink(std::string_view path) {
  const std::string prefix = "/proc/" + std::to_string(process_.pid) + "/";
  if (path.starts_with("/proc/self/")) {
    path.remove_prefix(11);
  } else if (path.starts_with(prefix)) {
    path.remove_prefix(prefix.size());
  } else {
    return HostIoError::kNoEntry;
  }
  if (path == "exe" && !ExePath().empty()) return ExePath();
  if (path == "cwd") {
    // The recording does not know the working directory; the environment's
    // PWD is what the shell that started the program said it was.
    std::string_view environ = InitialStrings(true);
    for (std::size_t at = 0; at < environ.size();) {
      std::size_t end = environ.find('\0', at);
      std::string_view entry = environ.substr(at, end - at);
      if (entry.starts_with("PWD=/")) return std::string(entry.substr(4));
      at = end + 1;
    }
  }
  return HostIoError::kNoEntry;
}

}  // namespace backstep::gdbstub
