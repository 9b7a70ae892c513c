// backstep index TRACE [--force] [--single-pass] [--cache-dir DIR]
//
// --single-pass builds without the parallel parts a trace.cache allows: the
// build takes longer, but reads late in the trace consult one segment fewer
// (docs/benchmarks.md).
#include <unistd.h>

#include <cstdio>

#include "backstep/core/trace.h"
#include "cli/cli.h"
#include "cli/open_trace.h"

namespace backstep::cli {

int RunIndex(Args& args) {
  bool force = args.TakeFlag("force");
  bool single_pass = args.TakeFlag("single-pass");
  std::optional<std::string> cache_dir = args.TakeOption("cache-dir");
  auto files = args.Positionals();
  if (files.size() != 1) return Usage("index takes one trace file");
  if (auto problem = args.Problem()) return Usage(*problem);

  std::vector<std::string> words;
  if (cache_dir) words = {"--cache-dir", *cache_dir};
  if (single_pass) words.push_back("--single-pass");
  Args opts(std::move(words));
  // --force: the old index stays until the new one is complete and replaces it.
  core::OpenOptions options;
  options.rebuild_index = force;
  auto trace = OpenTraceForCli(files[0], opts, std::move(options));
  if (!trace.ok()) return Fail(trace.status());
  const core::IndexStatus& idx = (*trace)->index_status();
  std::printf("%s: %s\n", idx.path.c_str(), IndexStatusText(idx).c_str());
  std::printf("events: %llu, index size: %llu bytes\n",
              static_cast<unsigned long long>((*trace)->event_count()),
              static_cast<unsigned long long>(idx.size_bytes));
  return 0;
}

}  // namespace backstep::cli
