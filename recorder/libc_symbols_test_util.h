// Test helpers: the installed libc's function symbols, from its detached
// debug file (Debian's libc6-dbg, found by build-id under
// /usr/lib/debug/.build-id), read with binutils' readelf and nm.
//
// Used by the tests that name glibc's string-function variants
// (evex_reads_test.cc) and decode its AVX-512 ones (libc_evex_decode_test.cc).
//
// Thread-safety: pure functions (they run commands through popen).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backstep/core/number.h"

namespace backstep::record::test_util {

// The standard output of a shell command ("" when it cannot run).
inline std::string RunCommand(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  return out;
}

// The detached debug file of `elf` (by its GNU build-id), or "" when none is
// installed.
inline std::string DebugFileOf(const std::string& elf) {
  const std::string notes = RunCommand("readelf -n " + elf);
  const std::size_t at = notes.find("Build ID: ");
  if (at == std::string::npos) return "";
  const std::string id = notes.substr(at + 10, notes.find('\n', at) - at - 10);
  if (id.size() < 3) return "";
  const std::string debug =
      "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  return access(debug.c_str(), R_OK) == 0 ? debug : "";
}

struct FunctionSymbol {
  std::uint64_t address = 0, size = 0;  // size 0: unknown
  std::string name;
};

// The code symbols (nm types t/T) of `file`, in nm's order.
inline std::vector<FunctionSymbol> FunctionSymbols(const std::string& file) {
  std::vector<FunctionSymbol> out;
  std::istringstream lines(RunCommand("nm -S " + file));
  for (std::string line; std::getline(lines, line);) {
    // "address size type name", or "address type name" without a size.
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.size() != 3 && f.size() != 4) continue;
    const std::string& type = f[f.size() - 2];
    if (type != "t" && type != "T") continue;
    const auto address = core::ParseNumber("0x" + f[0]);
    const std::optional<std::uint64_t> size =
        f.size() == 4 ? core::ParseNumber("0x" + f[1]) : std::optional<std::uint64_t>(0);
    if (!address || !size) continue;
    out.push_back({*address, *size, f.back()});
  }
  return out;
}

}  // namespace backstep::record::test_util
