// backstep_make_tfile: a gdb-written tfile stretched to N frames, in the
// sample's layout (WriteStretchedTfile, backstep/testing/tfile_fixtures.h):
// frame n is sample frame n % (its frames) with rax = n.
//
//   backstep_make_tfile SAMPLE.tf OUT.tf --frames N [--block 816]
//
// --block 816: R blocks cut to gdb's 816-byte amd64 layout (what gdbserver
// writes on a host without AVX-512; a third of the size of 2416-byte ones).
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "backstep/core/number.h"
#include "backstep/testing/tfile_fixtures.h"

int main(int argc, char** argv) {
  std::string sample, out;
  std::uint64_t frames = 0, block = 0;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if ((a == "--frames" || a == "--block") && i + 1 < argc) {
      const std::optional<std::uint64_t> n = backstep::core::ParseNumber(argv[++i]);
      if (!n) {
        sample.clear();
        break;
      }
      (a == "--frames" ? frames : block) = *n;
    } else if (!a.empty() && a[0] != '-' && sample.empty()) {
      sample = a;
    } else if (!a.empty() && a[0] != '-' && out.empty()) {
      out = a;
    } else {
      sample.clear();
      break;
    }
  }
  if (sample.empty() || out.empty() || frames == 0) {
    std::fprintf(stderr, "usage: %s SAMPLE.tf OUT.tf --frames N [--block 816]\n", argv[0]);
    return 2;
  }
  backstep::core::Status s =
      backstep::core::testing::WriteStretchedTfile(sample, out, frames, block);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
