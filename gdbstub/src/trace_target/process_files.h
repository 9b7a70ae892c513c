// ProcessFiles: the file system a debugger sees through vFile on a served
// recording (HostFiles), as if the recorded process were alive at the
// current position.
//
// Served, read-only:
//   /proc/PID/maps, /proc/PID/task/TID/maps   the mappings at the position
//                                             (core::MappingTimeline), in
//                                             the kernel's format
//   /proc/PID/cmdline, environ                the initial stack's argv/envp
//   /proc/PID/auxv                            the recorded auxiliary vector
//   /proc/PID/status                          Name, State, Pid, Threads
//   /proc/PID/exe (link and file), /proc/PID/cwd (link: the recorded $PWD)
//   the files the trace names: the executable and every file mapped at the
//   position, read from the local file system (under `sysroot` when set);
//   a path that resolves (symbolic links followed) to one of them is the
//   same file, so /lib64/ld-linux-x86-64.so.2 reaches the mapped loader.
// PID is the target's pid or "self"; TID a thread at the position. Anything
// else: ENOENT for /proc paths, EACCES elsewhere (the stub is no general
// file server). At most kMaxOpenFiles descriptors are open at once (EMFILE
// past that); virtual files are generated at open.
//
// Thread-safety: one thread at a time (the session's).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backstep/core/mappings.h"
#include "backstep/core/trace.h"
#include "backstep/gdbstub/capabilities.h"

namespace backstep::gdbstub {

class ProcessFiles final : public HostFiles {
 public:
  static constexpr std::size_t kMaxOpenFiles = 64;

  struct Process {
    std::uint64_t pid = 1;
    std::string exe_path;  // as recorded (or --exe); "" unknown
    std::string sysroot;   // prefix of every real file; "" = /
    std::vector<std::uint8_t> auxv;
  };
  // What changes with the position, asked at each open.
  struct Now {
    std::function<core::Position()> position;
    std::function<std::vector<core::ThreadId>()> threads;
    // The executable and auxv of the image at the position (a trace across
    // execve); unset: Process's.
    std::function<std::string()> exe_path = nullptr;
    std::function<std::vector<std::uint8_t>()> auxv = nullptr;
  };

  // `mappings` must outlive this object.
  ProcessFiles(std::shared_ptr<const core::Trace> trace, const core::MappingTimeline* mappings,
               Process process, Now now);
  ~ProcessFiles() override;

  HostIoResult<int> Open(std::string_view path) override;
  HostIoResult<std::size_t> Pread(int fd, std::uint64_t offset,
                                  std::span<std::uint8_t> out) override;
  HostIoResult<HostFileStat> Fstat(int fd) override;
  std::optional<HostIoError> Close(int fd) override;
  HostIoResult<std::string> Readlink(std::string_view path) override;

  // The text of /proc/PID/maps for `mappings` (also `monitor info mem`'s
  // source): "start-end perms offset 00:00 0" and the name at column 74.
  static std::string MapsText(const std::vector<core::Mapping>& mappings);

 private:
  struct OpenFile {
    std::variant<std::string, int> content;  // a generated file, or a host fd
  };
  // The /proc file `rest` ("maps", "task/2/maps", ...) of the process.
  HostIoResult<std::string> ProcFile(std::string_view rest);
  // The real file `path` names when it is served: an open host fd.
  HostIoResult<int> OpenServedFile(std::string_view path);
  // Canonical paths (under sysroot) of the files the trace names now.
  std::vector<std::string> ServedFiles();
  std::string HostPath(std::string_view path) const;
  // The executable and auxv now (Now's, else Process's).
  std::string ExePath() const { return now_.exe_path ? now_.exe_path() : process_.exe_path; }
  std::vector<std::uint8_t> Auxv() const { return now_.auxv ? now_.auxv() : process_.auxv; }
  // argv or envp strings of the initial stack, NUL-terminated each.
  const std::string& InitialStrings(bool environment);
  HostIoResult<int> Install(OpenFile file);
  OpenFile* Find(int fd);

  std::shared_ptr<const core::Trace> trace_;
  const core::MappingTimeline* mappings_;
  Process process_;
  Now now_;
  std::vector<std::optional<OpenFile>> files_;  // by fd
  std::optional<std::string> argv_, envp_;
};

}  // namespace backstep::gdbstub
