// TraceTarget's monitor commands over the generated REVEN trace.
#include <gtest/gtest.h>

#include "trace_target/trace_target.h"
#include "trace_target/trace_target_test_util.h"

namespace backstep::gdbstub {
namespace {

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not in:\n" << text;
}

class TraceTargetMonitor : public ::testing::Test {
 protected:
  void SetUp() override {
    fx_ = &testing::SharedReven();
    ASSERT_TRUE(fx_->trace);
    TraceTargetOptions options;
    options.exe_path = "/bin/prog";
    auto target = TraceTarget::Create(fx_->trace, options);
    ASSERT_TRUE(target.ok());
    target_ = std::move(*target);
  }
  std::string Run(std::string_view command) {
    auto out = target_->monitor_commands()->RunMonitorCommand(command);
    EXPECT_TRUE(out.ok()) << command << ": " << out.status().ToString();
    return out.ok() ? *out : "";
  }
  bool Fails(std::string_view command) {
    return !target_->monitor_commands()->RunMonitorCommand(command).ok();
  }
  void GoTo(std::uint64_t p) {
    target_->armed_moves().ArmGoto(core::Position(p));
    ASSERT_TRUE(target_->Resume(ResumeKind::kStep, std::nullopt, nullptr).ok());
  }
  std::string Hex(std::uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
  }

  const testing::RevenFixture* fx_ = nullptr;
  std::unique_ptr<TraceTarget> target_;
};

TEST_F(TraceTargetMonitor, HelpListsEveryCommand) {
  std::string help = Run("help");
  for (const char* name : {"info", "when", "goto", "reverse-stepi", "direction", "last-write",
                           "next-write", "history", "watch-filter"}) {
    EXPECT_TRUE(Contains(help, name));
  }
  EXPECT_EQ(Run(""), help);
  EXPECT_TRUE(Fails("frobnicate"));
}

TEST_F(TraceTargetMonitor, InfoAndWhen) {
  const std::string events = std::to_string(fx_->trace->event_count());
  std::string info = Run("info");
  EXPECT_TRUE(Contains(info, "format:     reven"));
  EXPECT_TRUE(Contains(info, "events:     " + events));
  EXPECT_TRUE(Contains(info, "exe:        /bin/prog"));
  EXPECT_TRUE(Contains(info, "direction:  forward"));
  EXPECT_EQ(Run("when"), "position 0 of " + events + " (thread " +
                             std::to_string(target_->current_thread().value) + ")\n");
  Run("goto 7");
  EXPECT_TRUE(Contains(Run("info"), "armed:      goto 7"));
  EXPECT_TRUE(Contains(Run("when"), "position 0 of"));
}

TEST_F(TraceTargetMonitor, GotoArguments) {
  EXPECT_TRUE(Fails("goto"));
  EXPECT_TRUE(Fails("goto x"));
  EXPECT_TRUE(Fails("goto 101%"));
  EXPECT_TRUE(Fails("goto " + std::to_string(fx_->trace->event_count() + 1)));
  EXPECT_TRUE(Contains(Run("goto 0x10"), "goto 16 armed"));
  EXPECT_TRUE(Contains(Run("direction"), "forward"));
  EXPECT_TRUE(Contains(Run("direction reverse"), "reverse"));
  EXPECT_TRUE(Fails("direction sideways"));
}

TEST_F(TraceTargetMonitor, WriteQueries) {
  const auto& info = fx_->info;
  const std::string addr = Hex(info.once_address);
  const std::string len = std::to_string(info.once_size);
  const std::string writer = "event " + std::to_string(info.once_event) + " ";
  EXPECT_TRUE(Contains(Run("last-write " + addr + " " + len), "no write before position 0"));
  EXPECT_TRUE(Contains(Run("next-write " + addr + " " + len), writer));
  EXPECT_TRUE(Contains(Run("next-write " + addr), "wrote"));
  GoTo(fx_->trace->event_count());
  EXPECT_TRUE(Contains(Run("last-write " + addr + " " + len), writer));
  EXPECT_TRUE(Contains(Run("next-write " + addr + " " + len), "no write from position"));
  std::string history = Run("history " + addr + " " + len);
  EXPECT_TRUE(Contains(history, writer));
  EXPECT_EQ(std::count(history.begin(), history.end(), '\n'), 1);
  EXPECT_TRUE(Fails("last-write"));
  EXPECT_TRUE(Fails("last-write zz"));
  EXPECT_TRUE(Fails("history " + addr + " --max 0"));
}

TEST_F(TraceTargetMonitor, HistoryIsCutAtMax) {
  // The stack around rsp is written over and over.
  GoTo(fx_->trace->event_count() / 2);
  auto rsp = target_->ReadRegister(target_->current_thread(), 7);
  ASSERT_TRUE(rsp.ok() && rsp->all_known());
  core::Address stack = 0;
  for (int i = 7; i >= 0; --i) stack = stack << 8 | rsp->bytes[i];
  stack -= 32;
  std::string history = Run("history " + Hex(stack) + " 64 --max 3");
  EXPECT_EQ(std::count(history.begin(), history.end(), '\n'), 4) << history;
  EXPECT_TRUE(Contains(history, "more; use --max N"));
}

TEST_F(TraceTargetMonitor, WatchFilter) {
  EXPECT_TRUE(target_->stop_points().watch_only_changes());
  EXPECT_TRUE(Contains(Run("watch-filter all"), "all"));
  EXPECT_FALSE(target_->stop_points().watch_only_changes());
  EXPECT_TRUE(Contains(Run("watch-filter changes"), "changes"));
  EXPECT_TRUE(target_->stop_points().watch_only_changes());
  EXPECT_TRUE(Fails("watch-filter some"));
}

}  // namespace
}  // namespace backstep::gdbstub
