// backstep index TRACE [--force] [--single-pass]
//
// --single-pass builds without the parallel parts a trace.cache allows: the
// build takes longer, but reads late in the trace consult one segment fewer
// (docs/benchmarks.md).
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "backstep/core/trace.h"
#include "cli/cli.h"
#include "cli/open_trace.h"

namespace backstep::cli {

int RunIndex(Args& args) {
  bool force = args.TakeFlag("force");
  bool single_pass = args.TakeFlag("single-pass");
  auto files = args.Positionals();
  if (files.size() != 1) return Usage("index takes one trace file");
  std::optional<std::string> cache_dir = args.TakeOption("cache-dir");
  if (auto unknown = args.UnknownOption()) return Usage("unknown option " + *unknown);

  auto open = [&]() {
    std::vector<std::string> words;
    if (cache_dir) words = {"--cache-dir", *cache_dir};
    if (single_pass) words.push_back("--single-pass");
    Args opts(std::move(words));
    return OpenTraceForCli(files[0], opts);
  };
  auto trace = open();
  if (!trace.ok()) return Fail(trace.status());
  if (force && (*trace)->index_status().reused) {
    std::string path = (*trace)->index_status().path;
    trace = core::Status::NotFound("");  // release the mapping before removing the file
    if (unlink(path.c_str()) != 0) {
      return Fail(core::Status::IOError(path + ": cannot remove the old index"));
    }
    trace = open();
    if (!trace.ok()) return Fail(trace.status());
  }
  const core::IndexStatus& idx = (*trace)->index_status();
  std::printf("%s: %s\n", idx.path.c_str(), IndexStatusText(idx).c_str());
  std::printf("events: %llu, index size: %llu bytes\n",
              static_cast<unsigned long long>((*trace)->event_count()),
              static_cast<unsigned long long>(idx.size_bytes));
  return 0;
}

}  // namespace backstep::cli
