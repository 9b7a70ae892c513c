// backstep_make_example: writes the built-in example trace (a generated REVEN
// rvnbintrace with 4-level paging, see core/testing/include/backstep/testing/reven_generator.h).
//
//   backstep_make_example OUT [--events N] [--seed S] [--cache-every K]
//   backstep_make_example --print-stack-address   (a stack address to dump)
//   backstep_make_example OUT --info   also prints the generator's facts, one
//       "key value" line each (events, far_pc, far_pc_event, once_address,
//       once_size, once_event, stack, code_lo, code_hi), for end-to-end tests
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "backstep/core/number.h"
#include "backstep/testing/reven_generator.h"

namespace {

using backstep::core::testing::GenerateRevenTrace;
using backstep::core::testing::RevenGenInfo;
using backstep::core::testing::RevenGenOptions;

constexpr std::uint64_t kDefaultEvents = 200000;

// The top of the generated program's stack, where its frames live.
std::uint64_t StackAddress(const RevenGenInfo& info) {
  for (const auto& r : info.ranges) {
    if (r.name == "stack") return r.start + r.size - 256;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  RevenGenOptions opts;
  opts.events = kDefaultEvents;
  std::string out;
  bool print_stack = false;
  bool print_info = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::uint64_t* number = a == "--events"        ? &opts.events
                            : a == "--seed"        ? &opts.seed
                            : a == "--cache-every" ? &opts.cache_every
                                                   : nullptr;
    const std::optional<std::uint64_t> n =
        number && i + 1 < argc ? backstep::core::ParseNumber(argv[i + 1]) : std::nullopt;
    if (n) {
      *number = *n;
      ++i;
    } else if (a == "--info") {
      print_info = true;
    } else if (a == "--print-stack-address") {
      print_stack = true;
    } else if (!a.empty() && a[0] != '-' && out.empty()) {
      out = a;
    } else {
      std::fprintf(stderr, "usage: %s OUT [--events N] [--seed S] [--cache-every K]\n", argv[0]);
      return 2;
    }
  }
  if (print_stack) {
    // The layout does not depend on the event count: generate a tiny trace in memory.
    RevenGenOptions tiny = opts;
    tiny.events = 16;
    std::vector<std::uint8_t> bytes;
    auto info = backstep::core::testing::GenerateRevenTraceBytes(tiny, &bytes);
    if (!info.ok()) {
      std::fprintf(stderr, "%s\n", info.status().ToString().c_str());
      return 1;
    }
    std::printf("0x%llx\n", static_cast<unsigned long long>(StackAddress(*info)));
    return 0;
  }
  if (out.empty()) {
    std::fprintf(stderr, "usage: %s OUT [--events N] [--seed S] [--cache-every K]\n", argv[0]);
    return 2;
  }
  auto info = GenerateRevenTrace(out, opts);
  if (!info.ok()) {
    std::fprintf(stderr, "backstep_make_example: %s\n", info.status().message().c_str());
    return 1;
  }
  std::printf("%s: %llu events, %zu physical regions, cr3 0x%llx\n", out.c_str(),
              static_cast<unsigned long long>(info->events), info->regions.size(),
              static_cast<unsigned long long>(info->cr3));
  if (print_info) {
    auto line = [](const char* key, unsigned long long value, bool hex) {
      std::printf(hex ? "%s 0x%llx\n" : "%s %llu\n", key, value);
    };
    line("events", info->events, false);
    line("far_pc", info->far_pc, true);
    line("far_pc_event", info->far_pc_event, false);
    line("once_address", info->once_address, true);
    line("once_size", info->once_size, false);
    line("once_event", info->once_event, false);
    line("stack", StackAddress(*info), true);
    if (!info->code_addresses.empty()) {
      line("code_lo", info->code_addresses.front(), true);
      line("code_hi", info->code_addresses.back(), true);
    }
  }
  return 0;
}
