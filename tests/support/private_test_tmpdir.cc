// Gives each test process a directory of its own as TEST_TMPDIR, the
// directory ::testing::TempDir() returns, and removes it when the process
// ends.
//
// ctest runs test cases as parallel processes (scripts/test: ctest -j), one
// per case: two parameters of one suite, or two binaries, run at once. Tests
// name their files after what they test (TempDir() + "/gathers.out"), so
// without this, GatherReads/gathers_O0_static read the output that
// GatherReads/gathers_O2_static wrote at the same moment, with the other
// program's addresses in it.
//
// Linked into every GoogleTest binary (CMakeLists.txt: backstep_add_tests,
// tests/CMakeLists.txt: cli_test).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace {

class PrivateTestTmpdir {
 public:
  PrivateTestTmpdir() {
    const char* base = getenv("TEST_TMPDIR");
    if (base == nullptr || base[0] == '\0') base = getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && base[0] != '\0' ? base : "/tmp") + "/backstep-test-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      fprintf(stderr, "private_test_tmpdir: cannot create %s: %s; tests share TempDir()\n",
              pattern.c_str(), strerror(errno));
      return;
    }
    dir_ = pattern;
    owner_ = getpid();
    setenv("TEST_TMPDIR", dir_.c_str(), 1);
  }

  // Forked children that exit() run this too: only the creator removes.
  ~PrivateTestTmpdir() {
    if (dir_.empty() || getpid() != owner_) return;
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  PrivateTestTmpdir(const PrivateTestTmpdir&) = delete;
  PrivateTestTmpdir& operator=(const PrivateTestTmpdir&) = delete;

 private:
  std::string dir_;
  pid_t owner_ = 0;
};

const PrivateTestTmpdir private_test_tmpdir;

}  // namespace
