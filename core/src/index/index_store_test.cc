// Where indexes are kept and what is trusted there: the shared fallback
// cache directory is per user and refused when anyone else could write it.
#include "index/index_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace backstep::core {
namespace {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  ScratchDir() {
    char tmpl[] = "/tmp/backstep-store-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Unsets an environment variable for the scope of the object.
class UnsetEnv {
 public:
  explicit UnsetEnv(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    unsetenv(name);
  }
  ~UnsetEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(IndexStoreTest, FallbackCacheDirectoryIsPerUser) {
  UnsetEnv xdg("XDG_CACHE_HOME"), home("HOME");
  const std::string path = CacheIndexPath("/some/trace.bin", "");
  const std::string want = "/tmp/backstep-cache-" + std::to_string(geteuid()) + "/trace.bin-";
  EXPECT_EQ(path.rfind(want, 0), 0u) << path;
}

TEST(IndexStoreTest, PrivateDirIsCreatedAndCheckedBeforeUse) {
  ScratchDir scratch;
  const std::string dir = scratch.path() + "/cache";
  ASSERT_TRUE(CheckPrivateDir(dir).ok());
  struct stat st;
  ASSERT_EQ(lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(CheckPrivateDir(dir).ok());  // existing and ours
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  Status open = CheckPrivateDir(dir);
  EXPECT_FALSE(open.ok());
  EXPECT_NE(open.message().find("open to other users"), std::string::npos) << open.ToString();
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  const std::string link = scratch.path() + "/link";
  ASSERT_EQ(symlink(dir.c_str(), link.c_str()), 0);
  Status linked = CheckPrivateDir(link);
  EXPECT_NE(linked.message().find("not a directory"), std::string::npos) << linked.ToString();
  if (geteuid() == 0) {  // only root can give a directory away
    ASSERT_EQ(chown(dir.c_str(), 65534, 65534), 0);
    Status theirs = CheckPrivateDir(dir);
    EXPECT_NE(theirs.message().find("owned by uid 65534"), std::string::npos) << theirs.ToString();
  }
}

}  // namespace
}  // namespace backstep::core
