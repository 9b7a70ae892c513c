// The command line against unlucky files and arguments: outputs that are
// not regular files, FIFOs where a trace or index should be, leftovers of
// killed builds, a rebuild that fails, option spellings. Each runs the real
// `backstep` binary on a small generated REVEN trace.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "backstep/testing/reven_generator.h"
#include "gtest/gtest.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int code = -1;
  std::string out, err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

class RobustCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("backstep-robust-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    trace_ = (dir_ / "trace.bin").string();
    testing::RevenGenOptions opts;
    opts.events = 3000;
    opts.seed = 11;
    ASSERT_TRUE(testing::GenerateRevenTrace(trace_, opts).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `backstep ARGS` through sh, under `prefix` (e.g. "ulimit -f 4;"),
  // with a time limit so that a hang fails instead of stopping the suite.
  CliRun Backstep(const std::string& args, const std::string& prefix = "") {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = "sh -c '" + prefix + " exec timeout 60 " + BACKSTEP_BIN + " " + args +
                            "' >" + out.string() + " 2>" + err.string() + " </dev/null";
    const int status = std::system(cmd.c_str());
    CliRun r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

  fs::path dir_;
  std::string trace_;
};

bool IsFifo(const fs::path& p) { return fs::is_fifo(fs::symlink_status(p)); }

TEST_F(RobustCliTest, OutputOntoAFifoIsWrittenNotReplaced) {
  const fs::path fifo = dir_ / "out.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = Slurp(fifo); });
  const CliRun r = Backstep("export " + trace_ + " -o " + fifo.string());
  // If backstep never opened the FIFO, the reader still waits: release it.
  const int release = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  if (release >= 0) close(release);
  reader.join();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(IsFifo(fifo)) << "the FIFO was replaced";
  ASSERT_EQ(Backstep("export " + trace_ + " -o " + (dir_ / "plain.tf").string()).code, 0);
  EXPECT_EQ(received, Slurp(dir_ / "plain.tf"));  // the same bytes as a regular file
}

TEST_F(RobustCliTest, OutputThroughASymlinkKeepsTheLink) {
  const fs::path target = dir_ / "real.tf", link = dir_ / "link.tf";
  std::ofstream(target) << "old";
  fs::create_symlink(target, link);
  const CliRun r = Backstep("export " + trace_ + " -o " + link.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(link)) << "the link was replaced";
  EXPECT_NE(Slurp(target), "old");
  EXPECT_EQ(Slurp(target).substr(0, 8), std::string("\x7fTRACE0\n", 8));
}

TEST_F(RobustCliTest, OutputOntoADirectoryIsRefused) {
  const fs::path out = dir_ / "out.d";
  fs::create_directory(out);
  const CliRun r = Backstep("export " + trace_ + " -o " + out.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_directory(out));
}

TEST_F(RobustCliTest, FifoAsTraceOrIndexDoesNotHang) {
  const fs::path fifo = dir_ / "fifo.bin";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  CliRun r = Backstep("info " + fifo.string());
  EXPECT_EQ(r.code, 1) << r.err;  // timeout(1) would exit 124
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  // A FIFO where the index goes: the index is built in the cache instead,
  // and the FIFO stays.
  const fs::path index = trace_ + ".bsidx";
  ASSERT_EQ(mkfifo(index.c_str(), 0600), 0);
  r = Backstep("info " + trace_ + " --cache-dir " + (dir_ / "cache").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find((dir_ / "cache").string()), std::string::npos) << r.out;
  EXPECT_TRUE(IsFifo(index));
}

TEST_F(RobustCliTest, LeftoversOfDeadBuildsAreRemoved) {
  // A pid that no longer exists: a child that has been waited for.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const fs::path leftover = trace_ + ".bsidx.tmp-" + std::to_string(dead) + "-0";
  const fs::path alive = trace_ + ".bsidx.tmp-" + std::to_string(getpid()) + "-0";
  std::ofstream(leftover) << "partial";
  std::ofstream(alive) << "in progress";
  const CliRun r = Backstep("index " + trace_);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(leftover));
  EXPECT_TRUE(fs::exists(alive));  // another live process's file is left alone
}

TEST_F(RobustCliTest, FailedForcedRebuildKeepsTheOldIndex) {
  ASSERT_EQ(Backstep("index " + trace_).code, 0);
  const std::string index = trace_ + ".bsidx";
  const std::string before = Slurp(index);
  ASSERT_GT(before.size(), 8192u);
  // Files may not grow past 4 KiB: the new index cannot be written (the
  // process dies of SIGXFSZ, as a killed or crashed build would).
  const CliRun r =
      Backstep("index --force " + trace_ + " --cache-dir " + (dir_ / "c").string(), "ulimit -f 4;");
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(Slurp(index), before) << "the old index is gone or changed";
  const CliRun again = Backstep("index " + trace_);
  EXPECT_NE(again.out.find("up to date (reused)"), std::string::npos) << again.out;
  // And a forced rebuild that can write replaces it.
  const CliRun forced = Backstep("index --force " + trace_);
  EXPECT_NE(forced.out.find("built now (rebuild asked"), std::string::npos) << forced.out;
}

TEST_F(RobustCliTest, TwoBuildersOfOneTraceTakeTurns) {
  // The second waits for the first's lock, then reuses its index.
  const std::string cmd = std::string(BACKSTEP_BIN) + " index " + trace_;
  const std::string both = "(" + cmd + " > " + (dir_ / "a.txt").string() + ") & (" + cmd + " > " +
                           (dir_ / "b.txt").string() + "); wait";
  ASSERT_EQ(std::system(both.c_str()), 0);
  const std::string a = Slurp(dir_ / "a.txt"), b = Slurp(dir_ / "b.txt");
  const int built =
      (a.find("built now") != std::string::npos) + (b.find("built now") != std::string::npos);
  EXPECT_EQ(built, 1) << a << b;
}

TEST_F(RobustCliTest, OptionSpellings) {
  const std::string cache = (dir_ / "cache dir").string();
  for (const char* command : {"info", "index"}) {
    const CliRun r =
        Backstep(std::string(command) + " " + trace_ + " --cache-dir \"" + cache + "\"");
    EXPECT_EQ(r.code, 0) << command << ": " << r.err;
  }
  CliRun r = Backstep("dump " + trace_ + " --at 5 --mem 0x1000");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--mem needs 2 values"), std::string::npos) << r.err;
  r = Backstep("dump " + trace_ + " --mem 0x1000 --at 5");
  EXPECT_NE(r.err.find("--mem needs 2 values"), std::string::npos) << r.err;
  r = Backstep("dump " + trace_ + " --at 5 --at 6");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--at is given more than once"), std::string::npos) << r.err;
  r = Backstep("dump " + trace_ + " --at 5 --mem 0xffffffffffffff00 0x1000");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("64-bit address space"), std::string::npos) << r.err;
}

TEST_F(RobustCliTest, CacheDirectoryErrorsSayWhy) {
  // The index cannot go beside the trace (a directory is in its place) nor
  // in a cache directory under a regular file: the message names the cause.
  fs::create_directory(trace_ + ".bsidx");
  std::ofstream(dir_ / "file") << "x";
  const CliRun r =
      Backstep("info " + trace_ + " --cache-dir " + (dir_ / "file" / "cache").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Not a directory"), std::string::npos) << r.err;
}

// A full disk beside the trace: a small tmpfs holding the trace, in a mount
// namespace of our own (user namespace when not root).
TEST_F(RobustCliTest, FullDiskBesideTheTraceFallsBackToTheCache) {
  const std::string unshare = geteuid() == 0 ? "unshare -m" : "unshare -rm";
  if (std::system((unshare + " true 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "no mount namespace here (" << unshare << " fails): cannot make a full disk";
  }
  const fs::path mnt = dir_ / "small", cache = dir_ / "cache";
  fs::create_directory(mnt);
  const auto size = fs::file_size(trace_) + 8192;  // the trace fits, its index does not
  const std::string script = "mount -t tmpfs -o size=" + std::to_string(size) + " tmpfs " +
                             mnt.string() + " && cp " + trace_ + " " + mnt.string() + "/ && " +
                             BACKSTEP_BIN + " info " + (mnt / "trace.bin").string() +
                             " --cache-dir " + cache.string();
  const fs::path out = dir_ / "full.txt";
  const int status =
      std::system((unshare + " sh -c '" + script + "' >" + out.string() + " 2>&1").c_str());
  const std::string text = Slurp(out);
  EXPECT_EQ(WEXITSTATUS(status), 0) << text;
  EXPECT_NE(text.find(cache.string()), std::string::npos) << text;
}

}  // namespace
}  // namespace backstep::core
