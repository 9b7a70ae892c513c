// tfile fixtures for tests and fuzz seeds: where gdb's real samples live, a
// hand byte builder (independent of TfileWriter, so that a writer and a
// reader sharing a misunderstanding cannot pass together) and a small valid
// file written by TfileWriter that exercises every reader path.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/status.h"
#include "backstep/core/types.h"

namespace backstep::core::testing {

// The directory of shared samples (`shared/samples`, beside the repository
// root): $BACKSTEP_SAMPLES_DIR when set, else found from this source file's
// path. The gdb samples are in SamplesDir() + "/gdb_tfile".
std::string SamplesDir();
// The whole file (empty when it cannot be read).
std::vector<std::uint8_t> ReadFileBytes(const std::string& path);

// Hand-built tfile bytes: magic, definition text, blank line, frames.
class TfileBytes {
 public:
  // `definitions`: lines each ending in '\n' (the blank line is added).
  explicit TfileBytes(std::string_view definitions = "R 10\n");

  // Frame header with a size patched by End().
  TfileBytes& Frame(int tpnum);
  TfileBytes& R(std::span<const std::uint8_t> block);
  TfileBytes& R(std::size_t size, std::uint8_t fill);
  TfileBytes& M(Address address, std::span<const std::uint8_t> bytes);
  TfileBytes& M(Address address, std::string_view text);
  TfileBytes& V(std::int32_t number, std::int64_t value);
  TfileBytes& S(std::string_view bytes);
  TfileBytes& End();
  // The end marker gdb writes (a u32 0).
  TfileBytes& EndMarker();
  TfileBytes& Raw(std::span<const std::uint8_t> bytes);
  TfileBytes& Le(std::uint64_t v, int n);

  std::vector<std::uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t frame_at_ = 0;
};

// A small valid file written by TfileWriter (layout core+sse+linux+segments+
// avx, with tdesc unless `tdesc` is false): tsvs 1 (builtin) and 2 "hits";
// tracepoints 2 (0x401132), 4 (0x40115f), 3 (0x4011e8, while-stepping 2),
// 5 (two locations, 0x401200 and 0x401300). Frames:
//   0 tp 2: R (rip 0x401132, rsp 0x7fffffffe570, TOP 5, fpr known), M 0x404040/8, M 0x404060/64
//   1 tp 4: V 2 = 1 (no R: pc from the tracepoint)
//   2 tp 3: R (rip 0x4011e8), M 0x1000 "aaaa", M 0x1002 "bbbb" (overlap: first wins)
//   3 tp 3: no block (while-stepping tracepoint: no pc)
//   4 tp 5: V 9 = -3 (two locations: no pc)
//   5 tp 2: S block "marker", M 0x2000 "x"
//   6 tp 2: empty (pc 0x401132)
std::vector<std::uint8_t> SmallTfile(bool tdesc = true);
inline constexpr std::uint64_t kSmallTfileFrames = 7;

// A gdb-written tfile (`sample_path`) stretched to `frames` frames in the
// sample's layout (its tracepoints, tsvs and R size, with the tdesc gdb
// writes for it), written by TfileWriter to `out_path`: frame n is sample
// frame n % (its frame count) with rax := n in its R block (so that a frame
// answered in place of another shows), its M and V blocks unchanged. For
// the tfind benchmarks (10^6 frames) and tests of far frames. `block_size`
// (nonzero) writes the R blocks in gdb's amd64 layout of that size instead
// (816: what gdbserver writes on a host without AVX-512, a third of 2416),
// register by register. Unsupported when that size is not gdb's amd64 816
// or 2416 bytes; IOError and Corruption from reading and writing.
Status WriteStretchedTfile(const std::string& sample_path, const std::string& out_path,
                           std::uint64_t frames, std::uint64_t block_size = 0);

}  // namespace backstep::core::testing
