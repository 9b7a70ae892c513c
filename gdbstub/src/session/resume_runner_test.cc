// The session hands continues (both directions) to its ResumeRunner and runs
// steps inline, so that the transport can watch its client during the long
// ones only.
#include "session/resume_runner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "session/session_test_util.h"
#include "testing/fake_target.h"

namespace backstep::gdbstub {
namespace {

// Runs each resume inline and records, for each, how far the target had
// resumed before and after (FakeTarget::resume_count).
class RecordingRunner final : public ResumeRunner {
 public:
  explicit RecordingRunner(FakeTarget& target) : target_(target) {}
  core::Expected<StopReason> Run(const Resume& resume) override {
    const int before = target_.resume_count;
    core::Expected<StopReason> stop = resume();
    runs.push_back(std::to_string(before) + "->" + std::to_string(target_.resume_count));
    return stop;
  }
  std::vector<std::string> runs;

 private:
  FakeTarget& target_;
};

TEST(ResumeRunnerTest, ContinuesGoThroughTheRunnerStepsDoNot) {
  FakeTarget target;
  RecordingRunner runner(target);
  Wire wire(target, {}, &runner);
  wire.Ask("s");
  wire.Ask("vCont;s:1");
  wire.Ask("bs");
  EXPECT_TRUE(runner.runs.empty());
  const int steps = target.resume_count;
  wire.Ask("c");
  wire.Ask("bc");
  wire.Ask("vCont;c");
  // Each continue ran inside the runner, once.
  ASSERT_EQ(runner.runs.size(), 3u);
  for (std::size_t i = 0; i < runner.runs.size(); ++i) {
    EXPECT_EQ(runner.runs[i], std::to_string(steps + static_cast<int>(i)) + "->" +
                                  std::to_string(steps + static_cast<int>(i) + 1));
  }
}

TEST(ResumeRunnerTest, WithoutARunnerContinuesRunInline) {
  FakeTarget target;
  Wire wire(target);
  wire.Ask("c");
  EXPECT_EQ(target.resume_count, 1);
}

}  // namespace
}  // namespace backstep::gdbstub
