// backstep origin TRACE ADDR [LEN] [--at N] [--depth D]: the provenance
// chain of a value (core/include/backstep/core/provenance.h), one line per
// step, as `monitor origin` prints it.
#include <cstdio>
#include <string>

#include "backstep/core/provenance.h"
#include "backstep/core/trace.h"
#include "cli/cli.h"
#include "cli/open_trace.h"

namespace backstep::cli {

int RunOrigin(Args& args) {
  std::optional<std::string> at = args.TakeOption("at");
  std::optional<std::string> depth_text = args.TakeOption("depth");
  std::optional<std::string> cache_dir = args.TakeOption("cache-dir");
  auto words = args.Positionals();
  if (auto problem = args.Problem()) return Usage(*problem);
  if (words.size() < 2 || words.size() > 3) return Usage("origin takes TRACE ADDR [LEN]");
  auto address = ParseNumber(words[1]);
  auto length = words.size() == 3 ? ParseNumber(words[2]) : std::optional<std::uint64_t>(1);
  if (!address || !length || *length == 0 || *length > 4096) {
    return Usage("origin takes ADDR and LEN (1..4096) as decimal or 0x hex");
  }
  unsigned depth = core::kDefaultOriginDepth;
  if (depth_text) {
    auto d = ParseNumber(*depth_text);
    if (!d || *d == 0 || *d > 1000) return Usage("--depth takes 1..1000");
    depth = static_cast<unsigned>(*d);
  }
  Args open_args(cache_dir ? std::vector<std::string>{"--cache-dir", *cache_dir}
                           : std::vector<std::string>{});
  auto trace = OpenTraceForCli(words[0], open_args);
  if (!trace.ok()) return Fail(trace.status());
  core::Position position((*trace)->event_count());
  if (at) {
    auto p = ParsePosition(*at, **trace);
    if (!p) return Usage("--at takes a position, 'end' or a percentage, not '" + *at + "'");
    position = *p;
  }
  auto steps = core::Origin(**trace, *address, *length, position, depth);
  if (!steps.ok()) return Fail(steps.status().Annotate(words[0]));
  std::fputs(core::FormatOrigin(*steps).c_str(), stdout);
  return 0;
}

}  // namespace backstep::cli
