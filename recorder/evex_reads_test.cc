// The reads made by glibc's string functions are recorded whichever variant
// glibc picked for this CPU: on one with AVX-512, __memchr_evex and
// __strlen_evex, whose EVEX and mask-register instructions capstone 4 cannot
// decode (zydis_fallback.h); elsewhere __memchr_avx2, __memchr_sse2, ...
//
// tests/programs/scans.c calls memchr on `found` (the byte sought at [5])
// and strlen on `text` ("hello": the NUL at [5]). The ptrace engine records
// it with the host's CPUID; the test then looks for a recorded read covering
// found[5] (text[5]) made by an instruction in libc, and says which function
// made it. The function's name comes from libc's symbol table in its
// detached debug file (/usr/lib/debug/.build-id, Debian's libc6-dbg) when
// one is installed; the instruction's encoding comes from libc itself. On a
// CPU where glibc picks the EVEX variants (AVX2, BMI2, AVX512VL/BW and the
// OS saving opmask/ZMM state), the reading instruction must be EVEX-encoded
// and, with symbols, the function's name must contain "evex".
#include <cpuid.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "recorder/libc_symbols_test_util.h"
#include "recorder/record_output_test_util.h"
#include "recorder/recorder.h"

namespace backstep::record {
namespace {

// glibc 2.36's condition for its *_evex string functions (ifunc-evex.h).
bool GlibcPicksEvex() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  std::uint32_t xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM state enabled by the OS.
  if ((xcr0_low & 0xe6) != 0xe6) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const unsigned kAvx2 = 1u << 5, kBmi2 = 1u << 8, kAvx512bw = 1u << 30, kAvx512vl = 1u << 31;
  return (b & (kAvx2 | kBmi2 | kAvx512bw | kAvx512vl)) == (kAvx2 | kBmi2 | kAvx512bw | kAvx512vl);
}

struct LibcRead {
  core::Address pc, address;
  std::uint64_t size;
};

// Keeps every read made by an instruction in an executable mapping of libc.
struct LibcReadsSink : RecordingSink {
  core::Status OnStart(const StartInfo& info) override {
    mappings = info.mappings;
    return core::Status::Ok();
  }
  void OnInstruction(const InstructionRecord& insn) override {
    if (insn.reads.empty()) return;
    const Mapping* m = LibcAt(insn.pc);
    if (!m) return;
    for (const core::MemoryAccess& r : insn.reads)
      reads.push_back({insn.pc, r.address, r.data.size()});
  }
  void OnSyscall(const SyscallRecord& sys) override {
    mappings.insert(mappings.end(), sys.mapped.begin(), sys.mapped.end());
  }
  core::Status Finish(bool) override { return core::Status::Ok(); }
  // The latest mapping of libc's code holding pc.
  const Mapping* LibcAt(core::Address pc) const {
    for (auto it = mappings.rbegin(); it != mappings.rend(); ++it) {
      if (pc >= it->start && pc < it->end()) {
        return it->exec && it->name.find("/libc.so") != std::string::npos ? &*it : nullptr;
      }
    }
    return nullptr;
  }
  std::vector<Mapping> mappings;
  std::vector<LibcRead> reads;
};

// The function of libc's detached debug symbols holding `vaddr`, or "" when
// libc has no debug file installed.
std::string LibcFunctionAt(const std::string& libc, std::uint64_t vaddr) {
  const std::string debug = test_util::DebugFileOf(libc);
  if (debug.empty()) return "";
  std::string best;
  std::uint64_t best_address = 0;
  for (const test_util::FunctionSymbol& f : test_util::FunctionSymbols(debug)) {
    if (f.address <= vaddr && f.address >= best_address) {
      best_address = f.address;
      best = f.name;
    }
  }
  return best;
}

// Whether the instruction at `offset` of file `path` is EVEX-encoded (0x62
// after any legacy prefixes: always EVEX in 64-bit mode).
bool EvexAt(const std::string& path, std::uint64_t offset) {
  std::ifstream f(path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char bytes[15] = {};
  f.read(bytes, sizeof bytes);
  for (char c : bytes) {
    const auto b = static_cast<std::uint8_t>(c);
    if (b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x3e || b == 0x26 ||
        b == 0x36 || b == 0x64 || b == 0x65)
      continue;
    return b == 0x62;
  }
  return false;
}

TEST(EvexReads, GlibcStringFunctionReadsAreRecorded) {
  const std::string program = std::string(BACKSTEP_RECORD_PROGRAMS) + "/scans_O2_pie";
  const std::string out = ::testing::TempDir() + "/scans.out";
  // The variant must be the one glibc picks for this CPU, untuned.
  unsetenv("GLIBC_TUNABLES");
  LibcReadsSink sink;
  RecordOptions options;
  options.spawn.argv = {program};
  auto r = test_util::RecordPrintingTo(options, sink, out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->end, RecordResult::End::kExited);
  EXPECT_EQ(r->undecodable, 0u);
  unsigned long long found = 0, text = 0;
  long at = -1;
  std::size_t length = 0;
  {
    std::ifstream printed(out);
    std::string line1, line2;
    std::getline(printed, line1);
    std::getline(printed, line2);
    ASSERT_EQ(std::sscanf(line1.c_str(), "found %llx text %llx", &found, &text), 2) << line1;
    ASSERT_EQ(std::sscanf(line2.c_str(), "memchr %ld strlen %zu", &at, &length), 2) << line2;
  }
  EXPECT_EQ(at, 5);
  EXPECT_EQ(length, 5u);
  const bool evex_expected = GlibcPicksEvex();
  std::printf("[ CPU      ] glibc %s its EVEX (AVX-512) string functions here\n",
              evex_expected ? "picks" : "does not pick");
  const struct {
    const char* function;
    core::Address address;
  } watched[] = {{"memchr", found + 5}, {"strlen", text + 5}};
  for (const auto& w : watched) {
    SCOPED_TRACE(w.function);
    const LibcRead* hit = nullptr;
    for (const LibcRead& read : sink.reads) {
      if (read.address <= w.address && w.address < read.address + read.size) {
        hit = &read;
        break;
      }
    }
    ASSERT_NE(hit, nullptr) << "no recorded read of " << w.function << "'s buffer[5] in libc";
    const Mapping* m = sink.LibcAt(hit->pc);
    ASSERT_NE(m, nullptr);
    const std::uint64_t offset = hit->pc - m->start + m->file_offset;
    // libc's segments sit at the virtual address equal to their file offset.
    const std::string name = LibcFunctionAt(m->name, offset);
    const bool evex = EvexAt(m->name, offset);
    std::printf(
        "[ VARIANT  ] the read of %s's buffer[5] was made by %s (libc+0x%llx, %s)\n", w.function,
        name.empty() ? "an unnamed libc function (no libc debug symbols installed)" : name.c_str(),
        static_cast<unsigned long long>(offset), evex ? "an EVEX instruction" : "not EVEX-encoded");
    if (!name.empty()) {
      EXPECT_NE(name.find(w.function), std::string::npos) << name;
    }
    if (evex_expected) {
      EXPECT_TRUE(evex) << "glibc should read with its EVEX variant on this CPU";
      if (!name.empty()) {
        EXPECT_NE(name.find("evex"), std::string::npos) << name;
      }
    }
  }
}

}  // namespace
}  // namespace backstep::record
