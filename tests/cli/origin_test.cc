// `backstep origin` on a generated REVEN trace: the first step of the chain
// names the event the generator wrote the once-written bytes with and the
// bytes it wrote (from a naive replay of the trace with the REVEN reader,
// not from the index); usage mistakes and bad files are refused.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "backstep/core/format_registry.h"
#include "backstep/testing/reven_generator.h"
#include "gtest/gtest.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

struct OriginRun {
  int code = -1;
  std::string out, err;
};

class OriginCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("backstep-origin-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    trace_ = (dir_ / "trace.bin").string();
    testing::RevenGenOptions opts;
    opts.events = 5000;
    opts.seed = 11;
    auto info = testing::GenerateRevenTrace(trace_, opts);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    info_ = *info;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static OriginRun Backstep(const std::string& args) {
    const fs::path out = dir_ / "out.txt", err = dir_ / "err.txt";
    const std::string cmd = std::string(BACKSTEP_BIN) + " " + args + " >" + out.string() + " 2>" +
                            err.string() + " </dev/null";
    const int status = std::system(cmd.c_str());
    OriginRun r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream o(out), e(err);
    r.out.assign(std::istreambuf_iterator<char>(o), {});
    r.err.assign(std::istreambuf_iterator<char>(e), {});
    return r;
  }

  static inline fs::path dir_;
  static inline std::string trace_;
  static inline testing::RevenGenInfo info_;
};

TEST_F(OriginCli, FirstStepIsTheGeneratorsWrite) {
  ASSERT_GT(info_.once_event, 0u);
  // The bytes as the replay leaves them: the once write's data.
  auto reader = OpenTraceFile(trace_);
  ASSERT_TRUE(reader.ok());
  std::map<Address, std::uint8_t> overlay;
  Event e;
  for (std::uint64_t i = 0; i <= info_.once_event; ++i) {
    auto more = (*reader)->Next(&e);
    ASSERT_TRUE(more.ok() && *more);
    for (const auto& m : e.writes) {
      for (std::size_t k = 0; k < m.data.size(); ++k) overlay[m.address + k] = m.data[k];
    }
  }
  std::string bytes;
  for (std::uint64_t k = 0; k < info_.once_size; ++k) {
    char b[4];
    std::snprintf(b, sizeof b, " %02x", overlay.at(info_.once_physical + k));
    bytes += b;
  }
  char addr[32];
  std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(info_.once_address));
  OriginRun r = Backstep("origin " + trace_ + " " + addr + " " + std::to_string(info_.once_size) +
                         " --at end --depth 2");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string first = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(first.rfind("#0 pos " + std::to_string(info_.once_event) + " pc 0x", 0), 0u) << r.out;
  EXPECT_NE(first.find(" mem " + std::string(addr) + "+" + std::to_string(info_.once_size) + " =" +
                       bytes),
            std::string::npos)
      << r.out;
  // Before the write, nothing wrote the bytes: the initial image.
  OriginRun before =
      Backstep("origin " + trace_ + " " + addr + " --at " + std::to_string(info_.once_event));
  ASSERT_EQ(before.code, 0) << before.err;
  EXPECT_EQ(before.out.rfind("#0 pos - pc - mem " + std::string(addr) + "+1 =", 0), 0u)
      << before.out;
  EXPECT_NE(before.out.find("(initial image)"), std::string::npos) << before.out;
}

TEST_F(OriginCli, Refusals) {
  EXPECT_EQ(Backstep("origin " + trace_).code, 2);
  EXPECT_EQ(Backstep("origin " + trace_ + " zz").code, 2);
  EXPECT_EQ(Backstep("origin " + trace_ + " 0x10 0").code, 2);
  EXPECT_EQ(Backstep("origin " + trace_ + " 0x10 8 --depth 0").code, 2);
  EXPECT_EQ(Backstep("origin " + trace_ + " 0x10 8 --bogus").code, 2);
  OriginRun past = Backstep("origin " + trace_ + " 0x10 8 --at 999999");
  EXPECT_EQ(past.code, 1);
  EXPECT_NE(past.err.find("past the end"), std::string::npos) << past.err;
  const std::string missing = (dir_ / "missing.bin").string();
  OriginRun bad = Backstep("origin " + missing + " 0x10");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find(missing), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace backstep::core
