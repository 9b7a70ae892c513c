// `backstep export` from the command line: the exit codes and messages of
// bad arguments (each names the argument), nothing written on error, the
// input left untouched, and a result the tfile reader opens with one frame
// per selected position.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "backstep/core/format_registry.h"
#include "backstep/testing/reven_generator.h"
#include "gtest/gtest.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

struct ExportRun {
  int code = -1;
  std::string out, err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ExportCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::path(::testing::TempDir()) / ("export_cli_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    trace_ = (dir_ / "trace.bin").string();
    testing::RevenGenOptions opts;
    opts.events = 3000;
    opts.seed = 11;
    ASSERT_TRUE(testing::GenerateRevenTrace(trace_, opts).ok());
    ASSERT_EQ(Backstep("index " + trace_).code, 0);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static ExportRun Backstep(const std::string& args) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = std::string(BACKSTEP_BIN) + " " + args + " >" + out.string() + " 2>" +
                            err.string() + " </dev/null";
    const int status = std::system(cmd.c_str());
    ExportRun r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

  // Files in the directory other than the trace, its index and the captures.
  static std::vector<std::string> Leftovers() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("trace.bin", 0) != 0 && name != "stdout.txt" && name != "stderr.txt") {
        names.push_back(name);
      }
    }
    return names;
  }

  static inline fs::path dir_;
  static inline std::string trace_;
};

TEST_F(ExportCliTest, BadArgumentsAreNamedAndNothingIsWritten) {
  const std::string out = (dir_ / "bad.tf").string();
  struct Case {
    std::string args;
    int code;
    std::string message;
  };
  const Case cases[] = {
      {"--from 10 --to 5", 1, "--from 10 is after --to 5"},
      {"--to 3001", 1, "--to 3001 is past the end of"},
      {"--from 5000", 1, "--from 5000 is past the end of"},
      {"--mem 0x1000", 2, "--mem '0x1000': expected ADDR:LEN"},
      {"--mem 0x1000:zz", 2, "--mem '0x1000:zz': LEN is not a number"},
      {"--mem 0x1000:0", 2, "--mem '0x1000:0': LEN must be 1..16 MiB"},
      {"--every 0", 2, "--every takes a number K >= 1"},
      {"--every 2 --at-pc 0x400000", 2, "--every and --at-pc exclude each other"},
      {"--at-pc nowhere", 2, "--at-pc takes an address"},
      {"--from tomorrow", 2, "--from takes a position"},
      {"--at-pc 0x5", 1, "no position selected"},
      {"--bogus 1", 2, "unknown option --bogus"},
  };
  for (const Case& c : cases) {
    ExportRun r = Backstep("export " + trace_ + " -o " + out + " " + c.args);
    EXPECT_EQ(r.code, c.code) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
  ExportRun r = Backstep("export " + trace_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("export needs -o OUT.tf"), std::string::npos) << r.err;
  r = Backstep("export " + trace_ + " -o " + trace_);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("refusing to overwrite the input trace"), std::string::npos) << r.err;
  EXPECT_TRUE(Leftovers().empty());
}

TEST_F(ExportCliTest, ExportsSelectedPositionsAndLeavesTheInputAlone) {
  const std::string before = Slurp(trace_);
  struct stat st_before = {};
  ASSERT_EQ(stat(trace_.c_str(), &st_before), 0);
  const std::string out = (dir_ / "part.tf").string();
  ExportRun r = Backstep("export " + trace_ + " -o " + out + " --from 100 --to 400 --every 3");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(out + ": 101 frames,"), std::string::npos) << r.out;

  auto reader = OpenTraceFile(out);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->header().format, "tfile");
  std::uint64_t frames = 0;
  Event e;
  while (true) {
    auto more = (*reader)->Next(&e);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    // "tracepoint N, $backstep_position = P": P = 100 + 3 * frame.
    EXPECT_NE(
        std::string(e.description).find("$backstep_position = " + std::to_string(100 + 3 * frames)),
        std::string::npos)
        << e.description;
    ++frames;
  }
  EXPECT_EQ(frames, 101u);

  struct stat st_after = {};
  ASSERT_EQ(stat(trace_.c_str(), &st_after), 0);
  EXPECT_EQ(st_after.st_mtim.tv_sec, st_before.st_mtim.tv_sec);
  EXPECT_EQ(st_after.st_mtim.tv_nsec, st_before.st_mtim.tv_nsec);
  EXPECT_EQ(Slurp(trace_), before);
  fs::remove(out);
  EXPECT_TRUE(Leftovers().empty());
}

}  // namespace
}  // namespace backstep::core
