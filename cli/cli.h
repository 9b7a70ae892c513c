// The `backstep` command line: shared pieces of the subcommands.
//
// Each subcommand lives in its own file (cmd_<name>.cc) and has the
// signature `int RunX(Args&)`: it prints results on stdout, one clear line per
// error on stderr ("backstep: <file>: <what>"), and returns the exit code
// (0 ok, 1 error, 2 usage).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/progress.h"
#include "backstep/core/status.h"

namespace backstep::cli {

// Command-line words after the subcommand, consumed front to back.
class Args {
 public:
  explicit Args(std::vector<std::string> words) : words_(std::move(words)) {}
  // Removes `--name VALUE` (or `--name=VALUE`) and returns VALUE. A second
  // occurrence, or `--name` as the last word, is a Problem().
  std::optional<std::string> TakeOption(std::string_view name);
  // Removes every occurrence of `--name A B` with `count` values; one with
  // fewer values left is a Problem().
  std::vector<std::vector<std::string>> TakeOptionN(std::string_view name, int count);
  // Removes `--name` and says whether it was there.
  bool TakeFlag(std::string_view name);
  // Removes the output file option: `-o FILE`, `--output FILE`, `--o FILE`.
  std::optional<std::string> TakeOutput();
  // The remaining words that do not start with "--", in order, without the
  // value of a `--cache-dir DIR` still there (OpenTraceForCli takes it later).
  std::vector<std::string> Positionals() const;
  // The first remaining word that starts with "--", if any.
  std::optional<std::string> UnknownOption() const;
  // What is wrong with the options, for Usage(): an option given twice or
  // without its values, else an unknown option; nullopt if nothing is.
  std::optional<std::string> Problem() const;
  // Removes the first bare "--" and every word after it, and returns those
  // words (a command line to run: `record -- PROG ARGS`).
  std::vector<std::string> TakeAfterSeparator();

 private:
  std::vector<std::string> words_;
  std::vector<std::string> problems_;
};

// Parses "0x1f", "31", "1_000": core::ParseNumber once the "_" digit
// separators are dropped; nullopt on garbage or overflow.
std::optional<std::uint64_t> ParseNumber(std::string_view text);

// True when both paths name the same existing file (hard links included).
bool SameFile(const std::string& a, const std::string& b);

// Prints "backstep: <status message>" on stderr and returns 1.
int Fail(const core::Status& status);
// Prints "backstep: <message>" and a usage hint on stderr; returns 2.
int Usage(std::string_view message);

// A ProgressFn drawing a bar on stderr when stderr is a terminal (nothing
// otherwise). Call FinishProgress() after the work to clear the line.
core::ProgressFn TerminalProgress();
void FinishProgress();
// Set by SIGINT; progress callbacks return false once it is set.
bool Interrupted();
void InstallInterruptHandler();

int RunInfo(Args& args);
int RunIndex(Args& args);
int RunDump(Args& args);
int RunConvert(Args& args);
int RunExport(Args& args);
int RunRecord(Args& args);
// `record --engine native` (cmd_record_native.cc), called by RunRecord once
// the options are parsed: `command` (empty with --from-log), the trace path;
// `log_only`: the record phase only (materialize later with --from-log).
// `snapshots`: --snapshot-ms / --snapshot-syscalls ("" when not given);
// `jobs`: --jobs (intervals materialized at once); `crash_first`: the last
// interval first, alone into FILE.last.ucir.
struct NativeCliOptions {
  std::optional<std::string> snapshot_ms, snapshot_syscalls, jobs;
  bool crash_first = false;
  bool no_syscall_buffer = false;
};
int RunRecordNative(const std::vector<std::string>& command, const std::string& path,
                    bool portable_cpuid, const std::optional<std::string>& log,
                    const std::optional<std::string>& from_log, bool log_only,
                    const NativeCliOptions& native = {});
int RunServe(Args& args);
int RunOrigin(Args& args);

}  // namespace backstep::cli
