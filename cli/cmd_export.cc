// backstep export TRACE -o OUT.tf [--from N] [--to M] [--every K | --at-pc ADDR ...]
//                 [--mem ADDR:LEN ...]
// Writes the selected positions as a gdb trace file for `target tfile`
// (backstep/core/tfile_export.h).
#include <sys/stat.h>

#include <cstdio>

#include "backstep/core/hex.h"
#include "backstep/core/tfile_export.h"
#include "cli/cli.h"
#include "cli/open_trace.h"

namespace backstep::cli {

int RunExport(Args& args) {
  std::optional<std::string> out = args.TakeOutput();
  std::optional<std::string> from = args.TakeOption("from");
  std::optional<std::string> to = args.TakeOption("to");
  std::optional<std::string> every = args.TakeOption("every");
  auto at_pcs = args.TakeOptionN("at-pc", 1);
  auto mems = args.TakeOptionN("mem", 1);
  std::optional<std::string> cache_dir = args.TakeOption("cache-dir");
  auto files = args.Positionals();
  if (auto problem = args.Problem()) return Usage(*problem);
  if (files.size() != 1) return Usage("export takes one trace file");
  if (!out) return Usage("export needs -o OUT.tf");
  if (every && !at_pcs.empty()) return Usage("--every and --at-pc exclude each other");

  core::TfileExportOptions options;
  if (every) {
    auto k = ParseNumber(*every);
    if (!k || *k == 0) return Usage("--every takes a number K >= 1, not '" + *every + "'");
    options.every = *k;
  }
  for (const auto& pc : at_pcs) {
    auto a = ParseNumber(pc[0]);
    if (!a) return Usage("--at-pc takes an address (decimal or 0x hex), not '" + pc[0] + "'");
    options.at_pcs.push_back(*a);
  }
  for (const auto& mem : mems) {
    auto range = core::ParseTfileMemoryRange(mem[0]);
    if (!range.ok()) return Usage(range.status().message());
    options.memory.push_back(*range);
  }
  if (SameFile(files[0], *out)) {
    return Fail(core::Status::InvalidArgument(*out + ": refusing to overwrite the input trace"));
  }

  Args open_args(cache_dir ? std::vector<std::string>{"--cache-dir", *cache_dir}
                           : std::vector<std::string>{});
  auto trace = OpenTraceForCli(files[0], open_args);
  if (!trace.ok()) return Fail(trace.status());
  if (from) {
    auto p = ParsePosition(*from, **trace);
    if (!p) return Usage("--from takes a position, 'end' or a percentage, not '" + *from + "'");
    options.from = *p;
  }
  if (to) {
    auto p = ParsePosition(*to, **trace);
    if (!p) return Usage("--to takes a position, 'end' or a percentage, not '" + *to + "'");
    options.to = *p;
  }
  options.progress = TerminalProgress();
  auto summary = core::ExportTfile(**trace, *out, options);
  FinishProgress();
  if (!summary.ok()) return Fail(summary.status());
  struct stat st = {};
  stat(out->c_str(), &st);
  std::printf("%s: %llu frames, %llu tracepoints (one per pc), frames of %llu bytes, %llu bytes\n",
              out->c_str(), static_cast<unsigned long long>(summary->frames),
              static_cast<unsigned long long>(summary->tracepoints),
              static_cast<unsigned long long>(summary->frame_size),
              static_cast<unsigned long long>(st.st_size));
  return 0;
}

}  // namespace backstep::cli
