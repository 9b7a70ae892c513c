// Parallel materialization (materialize.h, interval.h): one worker process
// per interval, `jobs` at once, each writing its interval as a finished
// part of the UCIR file (UsercornSink::CreatePart); the parts are appended
// in order to the caller's sink as soon as every earlier one is.
//
// Processes rather than threads: each worker owns its emu engine, its
// proxy tracee (ptrace is per-thread), the process environment and CPU
// pinning Materialize sets, and a crash in one cannot take the join down.
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "recorder/native/interval.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

// One interval's worker and what it reported.
struct Part {
  pid_t pid = -1;
  int fd = -1;
  // "ok POSITIONS BYTES FIELDS" or "err CODE POSITIONS BYTES\nMESSAGE"
  // (BYTES: the part file's size, which the join checks).
  std::string report;
  bool done = false;
  std::string path;
};

// The last interval with a tail (MaterializeOptions::tail_path): every call
// to the part and to the tail's sink.
class TeeSink : public RecordingSink {
 public:
  TeeSink(RecordingSink& a, RecordingSink& b) : a_(a), b_(b) {}
  core::Status OnStart(const StartInfo& start) override {
    core::Status s = a_.OnStart(start);
    return s.ok() ? b_.OnStart(start) : s;
  }
  void OnInstruction(const InstructionRecord& insn) override {
    a_.OnInstruction(insn);
    b_.OnInstruction(insn);
  }
  void OnSyscall(const SyscallRecord& syscall) override {
    a_.OnSyscall(syscall);
    b_.OnSyscall(syscall);
  }
  void OnSignal(const SignalRecord& signal) override {
    a_.OnSignal(signal);
    b_.OnSignal(signal);
  }
  void OnKilled(int signal) override {
    a_.OnKilled(signal);
    b_.OnKilled(signal);
  }
  core::Status Finish(bool exited) override {
    core::Status s = a_.Finish(exited), t = b_.Finish(exited);
    return s.ok() ? t : s;
  }

 private:
  RecordingSink& a_;
  RecordingSink& b_;
};

std::string ErrorReport(const core::Status& s, std::uint64_t positions, std::uint64_t bytes) {
  return "err " + std::to_string(int(s.code())) + " " + std::to_string(positions) + " " +
         std::to_string(bytes) + "\n" + s.message();
}

core::Status StatusFrom(int code, const std::string& message) {
  switch (static_cast<core::StatusCode>(code)) {
    case core::StatusCode::kUnsupported:
      return core::Status::Unsupported(message);
    case core::StatusCode::kInvalidArgument:
      return core::Status::InvalidArgument(message);
    case core::StatusCode::kIOError:
      return core::Status::IOError(message);
    case core::StatusCode::kNotFound:
      return core::Status::NotFound(message);
    default:
      return core::Status::Corruption(message);
  }
}

// In the worker: materializes interval k into its part file (and the tail,
// `tail` not empty); the report.
std::string RunWorker(const NativeLog& log, std::size_t k, const std::string& path,
                      const std::string& tail) {
  const std::size_t n = log.snapshots.size() + 1;
  Interval interval;
  Snapshot snapshot;
  if (k > 0) {
    core::Expected<Snapshot> read = ReadSnapshot(log.directory + "/" + log.snapshots[k - 1].file);
    if (!read.ok()) return ErrorReport(read.status(), 0, 0);
    snapshot = std::move(*read);
    if (snapshot.syscall != log.snapshots[k - 1].syscall)
      return ErrorReport(core::Status::Corruption("snapshot " + log.snapshots[k - 1].file +
                                                  " is not the log's (taken at another system "
                                                  "call)"),
                         0, 0);
    interval.snapshot = &snapshot;
    interval.first = snapshot.syscall;
    interval.rdtsc = snapshot.rdtsc;
  }
  interval.last = k + 1 == n;
  interval.limit = interval.last ? log.syscalls.size() : log.snapshots[k].syscall;
  interval.where = " of interval " + std::to_string(k) + " (from " +
                   (k ? "the snapshot after system call #" + std::to_string(interval.first - 1)
                      : std::string("exec")) +
                   ")";
  core::Expected<std::unique_ptr<UsercornSink>> part = UsercornSink::CreatePart(path, k == 0);
  if (!part.ok()) return ErrorReport(part.status(), 0, 0);
  std::unique_ptr<UsercornSink> tail_sink;
  if (!tail.empty()) {
    core::Expected<std::unique_ptr<UsercornSink>> t = UsercornSink::Create(tail, false);
    if (!t.ok()) return ErrorReport(t.status(), 0, 0);
    tail_sink = std::move(*t);
  }
  std::uint64_t positions = 0;
  TeeSink both(**part, tail_sink ? *tail_sink : **part);
  core::Expected<RecordResult> r = MaterializeInterval(
      log, interval, tail_sink ? static_cast<RecordingSink&>(both) : **part, &positions);
  // Finished in every case (the run finished it unless it could not
  // start): what the interval wrote before an error stays in the trace.
  const core::Status finished = (*part)->Finish(false);
  const std::uint64_t bytes = (*part)->bytes_written();
  if (!r.ok()) {
    if (tail_sink) std::remove(tail.c_str());  // a tail only of a run that ended as it did
    return ErrorReport(r.status(), positions, bytes);
  }
  if (!finished.ok()) return ErrorReport(finished, positions, 0);
  std::ostringstream out;
  out << "ok " << positions << ' ' << bytes << ' ' << r->instructions << ' ' << r->syscalls << ' '
      << int(r->end) << ' ' << r->exit_code << ' ' << r->signal << ' ' << r->signals << ' '
      << r->full_diffs;
  return out.str();
}

core::Status Launch(const NativeLog& log, std::size_t k, const std::string& tail, Part* part) {
  int fds[2];
  if (pipe(fds) != 0) return core::Status::IOError("pipe: " + std::string(std::strerror(errno)));
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]), close(fds[1]);
    return core::Status::IOError("fork: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {
    close(fds[0]);
    const std::string report = RunWorker(log, k, part->path, tail);
    for (std::size_t done = 0; done < report.size();) {
      const ssize_t w = write(fds[1], report.data() + done, report.size() - done);
      if (w <= 0) break;
      done += static_cast<std::size_t>(w);
    }
    _exit(0);
  }
  close(fds[1]);
  part->pid = pid;
  part->fd = fds[0];
  return core::Status::Ok();
}

// Reads what is ready from a running worker; at EOF, reaps it.
void Collect(Part* part) {
  char buf[4096];
  const ssize_t n = read(part->fd, buf, sizeof buf);
  if (n > 0) {
    part->report.append(buf, static_cast<std::size_t>(n));
    return;
  }
  if (n < 0 && errno == EINTR) return;
  close(part->fd);
  part->fd = -1;
  int status = 0;
  waitpid(part->pid, &status, 0);
  part->pid = -1;
  part->done = true;
  if (part->report.empty())
    part->report = ErrorReport(core::Status::IOError("the interval's worker process died (status " +
                                                     std::to_string(status) + ")"),
                               0, 0);
}

void StopAll(std::vector<Part>& parts) {
  for (Part& p : parts) {
    if (p.pid > 0) {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, nullptr, 0);
    }
    if (p.fd >= 0) close(p.fd);
    p.pid = p.fd = -1;
  }
}

}  // namespace

core::Expected<RecordResult> MaterializeIntervals(const NativeLog& log, UsercornSink& sink,
                                                  const MaterializeOptions& options) {
  const std::size_t n = log.snapshots.size() + 1;
  const std::string base = options.part_directory.empty()
                               ? std::filesystem::temp_directory_path().string()
                               : options.part_directory;
  std::string dir_template = base + "/backstep-parts-XXXXXX";
  if (!mkdtemp(dir_template.data()))
    return core::Status::IOError("cannot create a directory for the intervals' parts in " + base);
  const std::string dir = dir_template;
  std::vector<Part> parts(n);
  for (std::size_t k = 0; k < n; ++k) parts[k].path = dir + "/" + std::to_string(k);
  const std::size_t jobs = std::max(1u, options.jobs);
  // The order the workers start in: the last interval first for the tail.
  const bool tail = !options.tail_path.empty();
  std::vector<std::size_t> order;
  if (tail) order.push_back(n - 1);
  for (std::size_t k = 0; k + (tail ? 1 : 0) < n; ++k) order.push_back(k);
  bool tail_announced = false;
  std::size_t launched = 0, joined = 0, running = 0;
  std::uint64_t position = 0;  // of the joined trace
  RecordResult total;
  core::Status failure = core::Status::Ok();
  bool appended = false;  // the file holds something: it is finished, whatever happens
  // Starts workers until `jobs` run: before a join too, so that no core
  // waits while the join appends a part.
  auto launch = [&] {
    while (running < jobs && launched < n && failure.ok()) {
      const std::size_t k = order[launched];
      failure = Launch(log, k, tail && k + 1 == n ? options.tail_path : std::string(), &parts[k]);
      if (failure.ok()) ++launched, ++running;
    }
    return failure.ok();
  };
  while (joined < n && failure.ok()) {
    if (!launch()) break;
    std::vector<pollfd> fds;
    std::vector<Part*> polled;
    for (Part& p : parts) {
      if (p.fd < 0) continue;
      fds.push_back({p.fd, POLLIN, 0});
      polled.push_back(&p);
    }
    if (!fds.empty() && poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      failure = core::Status::IOError("poll: " + std::string(std::strerror(errno)));
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      Collect(polled[i]);
      if (polled[i]->done) --running;
    }
    if (!launch()) break;
    if (tail && !tail_announced && parts[n - 1].done && parts[n - 1].report.rfind("ok", 0) == 0) {
      tail_announced = true;  // its worker wrote and finished the tail's file
      if (options.on_tail) options.on_tail();
    }
    // Join every finished part whose predecessors are joined.
    while (joined < n && parts[joined].done) {
      Part& p = parts[joined];
      std::istringstream report(p.report);
      std::string word;
      report >> word;
      if (word != "ok") {
        int code = 0;
        std::uint64_t positions = 0, bytes = 0;
        report >> code >> positions >> bytes;
        std::string message;
        std::getline(report, message);
        std::getline(report, message, '\0');
        // What the interval wrote before it failed stays in the trace.
        const std::uint64_t start = position;
        if (bytes > 0) appended = sink.AppendPart(p.path, bytes).ok() || appended;
        failure = StatusFrom(code, message + " [interval " + std::to_string(joined) +
                                       " starts at position " + std::to_string(start) +
                                       " of the trace: position " +
                                       std::to_string(start + positions) + " there]");
        break;
      }
      int end = 0;
      std::uint64_t positions = 0, bytes = 0;
      RecordResult r;
      report >> positions >> bytes >> r.instructions >> r.syscalls >> end >> r.exit_code >>
          r.signal >> r.signals >> r.full_diffs;
      r.end = static_cast<RecordResult::End>(end);
      core::Status s = sink.AppendPart(p.path, bytes);
      std::remove(p.path.c_str());
      if (!s.ok()) {
        failure =
            StatusFrom(int(s.code()), "interval " + std::to_string(joined) + " (from position " +
                                          std::to_string(position) + "): " + s.message());
        break;
      }
      appended = true;
      position += positions;
      total.instructions += r.instructions;
      total.syscalls += r.syscalls;
      total.signals += r.signals;
      total.full_diffs += r.full_diffs;
      total.end = r.end, total.exit_code = r.exit_code, total.signal = r.signal;
      ++joined;
    }
  }
  StopAll(parts);
  for (const Part& p : parts) std::remove(p.path.c_str());
  rmdir(dir.c_str());
  // The file holds the parts appended (the trace up to a failure): the
  // last one ended it (EXIT), this completes the file.
  if (!failure.ok()) {
    if (appended) sink.Finish(false);
    return failure;
  }
  if (core::Status s = sink.Finish(true); !s.ok()) return s;
  return total;
}

}  // namespace backstep::record
