// Parallel materialization (materialize.h, interval.h): one worker process
// per interval, `jobs` at once, each writing a spool file; the spools are
// replayed in order into the caller's sink as soon as every earlier one is.
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
#include "recorder/native/spool_sink.h"
#include "recorder/usercorn_sink.h"

namespace backstep::record {
namespace {

// One interval's worker and what it reported.
struct Part {
  pid_t pid = -1;
  int fd = -1;
  std::string report;  // "ok FIELDS" or "err CODE POSITIONS\nMESSAGE"
  bool done = false;
  std::string spool;
};

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

// In the worker: materializes interval k into its spool; the report.
std::string RunWorker(const NativeLog& log, std::size_t k, const std::string& spool,
                      bool keep_start) {
  const std::size_t n = log.snapshots.size() + 1;
  Interval interval;
  Snapshot snapshot;
  if (k > 0) {
    core::Expected<Snapshot> read = ReadSnapshot(log.directory + "/" + log.snapshots[k - 1].file);
    if (!read.ok())
      return "err " + std::to_string(int(read.status().code())) + " 0\n" + read.status().message();
    snapshot = std::move(*read);
    if (snapshot.syscall != log.snapshots[k - 1].syscall)
      return "err " + std::to_string(int(core::StatusCode::kCorruption)) + " 0\nsnapshot " +
             log.snapshots[k - 1].file + " is not the log's (taken at another system call)";
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
  core::Expected<std::unique_ptr<SpoolSink>> sink = SpoolSink::Create(spool, keep_start);
  if (!sink.ok())
    return "err " + std::to_string(int(sink.status().code())) + " 0\n" + sink.status().message();
  std::uint64_t positions = 0;
  core::Expected<RecordResult> r = MaterializeInterval(log, interval, **sink, &positions);
  if (!r.ok()) {
    return "err " + std::to_string(int(r.status().code())) + " " + std::to_string(positions) +
           "\n" + r.status().message();
  }
  std::ostringstream out;
  out << "ok " << r->instructions << ' ' << r->syscalls << ' ' << int(r->end) << ' ' << r->exit_code
      << ' ' << r->signal << ' ' << r->signals << ' ' << r->full_diffs;
  return out.str();
}

core::Status Launch(const NativeLog& log, std::size_t k, bool keep_start, Part* part) {
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
    const std::string report = RunWorker(log, k, part->spool, keep_start);
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
    part->report = "err " + std::to_string(int(core::StatusCode::kIOError)) +
                   " 0\nthe interval's worker process died (status " + std::to_string(status) + ")";
}

// The last interval alone, as a trace of its own (its start: the snapshot).
core::Status WriteTail(const std::string& spool, const std::string& path) {
  core::Expected<std::unique_ptr<UsercornSink>> sink = UsercornSink::Create(path, false);
  if (!sink.ok()) return sink.status();
  core::Expected<SpoolCounts> c = ReplaySpool(spool, **sink, /*with_start=*/true);
  if (!c.ok()) return c.status();
  if (c->killed) (*sink)->OnKilled(c->killed);
  return (*sink)->Finish(c->exited);
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

core::Expected<RecordResult> MaterializeIntervals(const NativeLog& log, RecordingSink& sink,
                                                  const MaterializeOptions& options) {
  const std::size_t n = log.snapshots.size() + 1;
  const std::string base = options.spool_directory.empty()
                               ? std::filesystem::temp_directory_path().string()
                               : options.spool_directory;
  std::string dir_template = base + "/backstep-spool-XXXXXX";
  if (!mkdtemp(dir_template.data()))
    return core::Status::IOError("cannot create a spool directory in " + base);
  const std::string dir = dir_template;
  std::vector<Part> parts(n);
  for (std::size_t k = 0; k < n; ++k) parts[k].spool = dir + "/" + std::to_string(k);
  const std::size_t jobs = std::max(1u, options.jobs);
  // The order the workers start in: the last interval first for the tail.
  const bool tail = !options.tail_path.empty();
  std::vector<std::size_t> order;
  if (tail) order.push_back(n - 1);
  for (std::size_t k = 0; k + (tail ? 1 : 0) < n; ++k) order.push_back(k);
  bool tail_written = false;
  std::size_t launched = 0, joined = 0, running = 0;
  std::uint64_t position = 0;  // of the joined trace
  RecordResult total;
  SpoolCounts last;
  core::Status failure = core::Status::Ok();
  // Starts workers until `jobs` run: before a join too, so that no core
  // waits while the join replays a long spool.
  auto launch = [&] {
    while (running < jobs && launched < n && failure.ok()) {
      const std::size_t k = order[launched];
      const bool keep_start = k == 0 || (tail && k + 1 == n);
      failure = Launch(log, k, keep_start, &parts[k]);
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
    if (tail && !tail_written && parts[n - 1].done && parts[n - 1].report.rfind("ok", 0) == 0) {
      tail_written = true;
      if (core::Status s = WriteTail(parts[n - 1].spool, options.tail_path); !s.ok()) {
        failure = s;
        break;
      }
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
        std::uint64_t positions = 0;
        report >> code >> positions;
        std::string message;
        std::getline(report, message);
        std::getline(report, message, '\0');
        // What the interval wrote before it failed stays in the trace.
        const std::uint64_t start = position;
        if (core::Expected<SpoolCounts> c = ReplaySpool(p.spool, sink, joined == 0); c.ok())
          position += c->positions;
        failure = StatusFrom(code, message + " [interval " + std::to_string(joined) +
                                       " starts at position " + std::to_string(start) +
                                       " of the trace: position " +
                                       std::to_string(start + positions) + " there]");
        break;
      }
      int end = 0;
      RecordResult r;
      report >> r.instructions >> r.syscalls >> end >> r.exit_code >> r.signal >> r.signals >>
          r.full_diffs;
      r.end = static_cast<RecordResult::End>(end);
      core::Expected<SpoolCounts> c = ReplaySpool(p.spool, sink, joined == 0);
      std::remove(p.spool.c_str());
      if (!c.ok()) {
        failure = c.status();
        break;
      }
      position += c->positions;
      last = *c;
      total.instructions += r.instructions;
      total.syscalls += r.syscalls;
      total.signals += r.signals;
      total.full_diffs += r.full_diffs;
      total.end = r.end, total.exit_code = r.exit_code, total.signal = r.signal;
      ++joined;
    }
  }
  StopAll(parts);
  for (const Part& p : parts) std::remove(p.spool.c_str());
  rmdir(dir.c_str());
  if (!failure.ok()) {
    if (joined > 0 || position > 0) sink.Finish(false);
    return failure;
  }
  if (last.killed) sink.OnKilled(last.killed);
  if (core::Status s = sink.Finish(last.exited); !s.ok()) return s;
  return total;
}

}  // namespace backstep::record
