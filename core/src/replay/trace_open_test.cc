// Trace::Open's OpenOptions::map_in_cached_trace: the trace's mapping is
// resident after open with it, and only as far as reads touched it without.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>

#include "backstep/core/open_options.h"
#include "backstep/core/trace.h"
#include "backstep/testing/reven_generator.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

// The resident bytes (smaps "Rss:") of this process's mappings of `path`;
// -1 if it has none.
long long ResidentBytesOf(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  long long total = -1;
  bool in_path = false;
  while (std::getline(smaps, line)) {
    // A mapping's first line: "start-end perms offset dev inode   path".
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' ')) {
      in_path = line.size() >= path.size() && line.ends_with(path);
    } else if (in_path && line.starts_with("Rss:")) {
      total = (total < 0 ? 0 : total) + std::stoll(line.substr(4)) * 1024;
    }
  }
  return total;
}

TEST(TraceOpen, MapInCachedTraceMakesTheCachedTraceResident) {
  char name[] = "/tmp/backstep-trace-open-test-XXXXXX";
  ASSERT_NE(mkdtemp(name), nullptr);
  const std::string dir = name;
  const std::string path = fs::canonical(dir).string() + "/trace.bin";
  testing::RevenGenOptions gen;
  gen.events = 600000;
  ASSERT_TRUE(testing::GenerateRevenTrace(path, gen).ok());
  const auto size = static_cast<long long>(fs::file_size(path));
  ASSERT_GT(size, 16 << 20);
  // The index is built once, by a trace closed before the checks: a build
  // reads the whole trace.
  ASSERT_TRUE(Trace::Open(path).ok());

  {
    auto trace = Trace::Open(path);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    const long long resident = ResidentBytesOf(path);
    ASSERT_GE(resident, 0) << "no mapping of " << path;
    EXPECT_LT(resident, size / 4) << "without the option, only what opening touched";
  }
  OpenOptions options;
  options.map_in_cached_trace = true;
  auto trace = Trace::Open(path, options);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  // The trace was just written: the page cache holds all of it.
  EXPECT_GE(ResidentBytesOf(path), size - 4096);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace backstep::core
