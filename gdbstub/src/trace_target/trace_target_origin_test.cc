// `monitor origin` over the generated REVEN trace: the first step is the
// last write the memory index knows, with the value a cursor reads after it;
// usage errors are refused. The chains themselves are checked on a recorded
// program whose data flow is known (tests/python/test_origin.py).
#include <gtest/gtest.h>

#include "backstep/core/cursor.h"
#include "backstep/core/provenance.h"
#include "backstep/core/search.h"
#include "trace_target/trace_target.h"
#include "trace_target/trace_target_test_util.h"

namespace backstep::gdbstub {
namespace {

class TraceTargetOrigin : public ::testing::Test {
 protected:
  void SetUp() override {
    fx_ = &testing::SharedReven();
    ASSERT_TRUE(fx_->trace);
    auto target = TraceTarget::Create(fx_->trace, TraceTargetOptions());
    ASSERT_TRUE(target.ok());
    target_ = std::move(*target);
  }
  void GoTo(std::uint64_t p) {
    target_->armed_moves().ArmGoto(core::Position(p));
    ASSERT_TRUE(target_->Resume(ResumeKind::kStep, std::nullopt, nullptr).ok());
  }
  static std::string Hex(std::uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
  }

  const testing::RevenFixture* fx_ = nullptr;
  std::unique_ptr<TraceTarget> target_;
};

TEST_F(TraceTargetOrigin, FirstStepIsTheLastWrite) {
  const auto& info = fx_->info;
  ASSERT_GT(info.once_event, 0u);
  GoTo(fx_->trace->event_count());
  const std::string command =
      "origin " + Hex(info.once_address) + " " + std::to_string(info.once_size) + " 3";
  auto out = target_->monitor_commands()->RunMonitorCommand(command);
  ASSERT_TRUE(out.ok()) << out.status().ToString();

  // The same answer from the core's queries, independently of the monitor.
  auto steps = core::Origin(*fx_->trace, info.once_address, info.once_size,
                            core::Position(fx_->trace->event_count()), 3);
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  ASSERT_FALSE(steps->empty());
  EXPECT_EQ(*out, core::FormatOrigin(*steps));
  const core::OriginStep& first = steps->front();
  ASSERT_TRUE(first.position.has_value());
  EXPECT_EQ(first.position->value, info.once_event);
  auto write = core::LastWrite(*fx_->trace, info.once_address, info.once_size,
                               core::Position(fx_->trace->event_count()));
  ASSERT_TRUE(write.ok() && write->has_value());
  EXPECT_EQ((*write)->event, info.once_event);

  auto cursor = fx_->trace->NewCursor();
  ASSERT_TRUE(cursor.ok());
  ASSERT_TRUE((*cursor)->Seek(core::Position(info.once_event)).ok());
  EXPECT_EQ(first.pc, (*cursor)->Pc((*cursor)->current_thread()));
  ASSERT_TRUE((*cursor)->Seek(core::Position(info.once_event + 1)).ok());
  std::vector<std::uint8_t> value(first.location.length), known(first.location.length);
  ASSERT_TRUE((*cursor)->ReadMemory(first.location.address, value, known).ok());
  EXPECT_EQ(first.value, value);
  EXPECT_EQ(first.known, known);
  EXPECT_NE(out->find("#0 pos " + std::to_string(info.once_event) + " pc "), std::string::npos)
      << *out;
  EXPECT_LE(steps->size(), 3u);
  EXPECT_FALSE(steps->back().end.empty()) << *out;
}

TEST_F(TraceTargetOrigin, BeforeTheWriteTheValueIsInitial) {
  const auto& info = fx_->info;
  ASSERT_GT(info.once_event, 0u);
  GoTo(info.once_event);  // the once-written bytes have no write before this
  auto out = target_->monitor_commands()->RunMonitorCommand("origin " + Hex(info.once_address));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NE(out->find("#0 pos - pc -"), std::string::npos) << *out;
  EXPECT_NE(out->find("(initial image)"), std::string::npos) << *out;
}

TEST_F(TraceTargetOrigin, UsageErrors) {
  for (const char* bad : {"origin", "origin zz", "origin 0x10 0", "origin 0x10 8 0",
                          "origin 0x10 8 2 9", "origin 0x10 5000"}) {
    auto out = target_->monitor_commands()->RunMonitorCommand(bad);
    EXPECT_FALSE(out.ok()) << bad;
    if (!out.ok()) {
      EXPECT_NE(out.status().message().find("usage: monitor origin"), std::string::npos);
    }
  }
  auto help = target_->monitor_commands()->RunMonitorCommand("help");
  ASSERT_TRUE(help.ok());
  EXPECT_NE(help->find("origin ADDR [LEN] [DEPTH]"), std::string::npos);
}

}  // namespace
}  // namespace backstep::gdbstub
