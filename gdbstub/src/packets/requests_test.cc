// Parsing of every packet family's arguments into typed requests.
#include <gtest/gtest.h>

#include "packets/breakpoints.h"
#include "packets/handshake.h"
#include "packets/lifecycle.h"
#include "packets/memory.h"
#include "packets/monitor.h"
#include "packets/registers.h"
#include "packets/resume.h"
#include "packets/search.h"
#include "packets/threads.h"
#include "packets/trace_frames.h"
#include "packets/xfer.h"

namespace backstep::gdbstub {
namespace {

TEST(RequestsTest, MemoryRange) {
  EXPECT_EQ(ParseMemoryRange("4016b3,40"), (MemoryRange{0x4016b3, 0x40}));
  EXPECT_EQ(ParseMemoryRange("0,ffffffffffffffff"), (MemoryRange{0, ~0ull}));
  for (std::string_view bad :
       {"", "4016b3", ",40", "4016b3,", "x,1", "1,1,1", "1,10000000000000000"}) {
    EXPECT_EQ(ParseMemoryRange(bad), std::nullopt) << bad;
  }
}

TEST(RequestsTest, ReadLengthIsCapped) {
  EXPECT_EQ(ClampReadLength({0, ~0ull}, 0x2000), 0x2000u);
  EXPECT_EQ(ClampReadLength({0x1000, 0x40}, 0x2000), 0x40u);
  EXPECT_EQ(ClampReadLength({~0ull - 1, 0x40}, 0x2000), 2u);  // stops at 2^64
}

TEST(RequestsTest, Registers) {
  auto g = ParseReadRegisters("");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->thread, std::nullopt);
  g = ParseReadRegisters(";thread:2;");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->thread, (ThreadSpec{std::nullopt, WireId::Of(2)}));
  EXPECT_EQ(ParseReadRegisters("x"), std::nullopt);
  auto p = ParseReadRegister("10;thread:p1.1;");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->regnum, 0x10);
  EXPECT_EQ(p->thread, (ThreadSpec{WireId::Of(1), WireId::Of(1)}));
  EXPECT_EQ(ParseReadRegister(""), std::nullopt);
  EXPECT_EQ(ParseReadRegister("ffffffffff"), std::nullopt);
}

TEST(RequestsTest, Breakpoints) {
  EXPECT_EQ(ParseBreakpointArgs(",4016b3,1"), (BreakpointRequest{0x4016b3, 1}));
  EXPECT_EQ(ParseBreakpointArgs(",4c6f30,4;X2,0a01"), (BreakpointRequest{0x4c6f30, 4}));
  for (std::string_view bad : {"", ",", ",1", "4016b3,1", ",x,1", ",1,"}) {
    EXPECT_EQ(ParseBreakpointArgs(bad), std::nullopt) << bad;
  }
}

TEST(RequestsTest, VContActions) {
  auto actions = ParseVCont("s:p1.1;c:p1.-1");
  ASSERT_TRUE(actions);
  ASSERT_EQ(actions->size(), 2u);
  EXPECT_EQ((*actions)[0].kind, ResumeKind::kStep);
  EXPECT_EQ((*actions)[0].thread, (ThreadSpec{WireId::Of(1), WireId::Of(1)}));
  EXPECT_EQ((*actions)[1].kind, ResumeKind::kContinue);
  EXPECT_EQ((*actions)[1].thread, (ThreadSpec{WireId::Of(1), WireId::All()}));

  actions = ParseVCont("S05:1;C0b");
  ASSERT_TRUE(actions);
  EXPECT_EQ((*actions)[0].signal, 5);
  EXPECT_EQ((*actions)[0].thread, (ThreadSpec{std::nullopt, WireId::Of(1)}));
  EXPECT_EQ((*actions)[1].signal, 0x0b);
  EXPECT_EQ((*actions)[1].thread, std::nullopt);

  // A range step (gdb's next): a step with [start, end).
  actions = ParseVCont("r401636,40164a:p1.1;c:p1.-1");
  ASSERT_TRUE(actions);
  ASSERT_EQ(actions->size(), 2u);
  EXPECT_EQ((*actions)[0].kind, ResumeKind::kStep);
  EXPECT_EQ((*actions)[0].range, std::make_pair(std::uint64_t{0x401636}, std::uint64_t{0x40164a}));
  EXPECT_EQ((*actions)[0].thread, (ThreadSpec{WireId::Of(1), WireId::Of(1)}));
  EXPECT_EQ((*actions)[1].range, std::nullopt);
  actions = ParseVCont("r10,10");
  ASSERT_TRUE(actions);
  EXPECT_EQ((*actions)[0].range, std::make_pair(std::uint64_t{0x10}, std::uint64_t{0x10}));

  for (std::string_view bad : {"", "c;", "r1000", "r2000,1000", "r,10", "r10,", "rzz,10", "t", "x",
                               "c:", "C", "s05", "C100", "c:zz"}) {
    EXPECT_EQ(ParseVCont(bad), std::nullopt) << bad;
  }
}

TEST(RequestsTest, ResumeArgs) {
  EXPECT_EQ(ParseResumeArgs(""), ResumeArgs{});
  EXPECT_EQ(ParseResumeArgs("401000"), (ResumeArgs{std::nullopt, 0x401000}));
  EXPECT_EQ(ParseResumeArgs("x"), std::nullopt);
  EXPECT_EQ(ParseSignalResumeArgs("05"), (ResumeArgs{5, std::nullopt}));
  EXPECT_EQ(ParseSignalResumeArgs("0b;401000"), (ResumeArgs{0x0b, 0x401000}));
  EXPECT_EQ(ParseSignalResumeArgs(""), std::nullopt);
  EXPECT_EQ(ParseSignalResumeArgs("05;"), std::nullopt);
  EXPECT_EQ(ParseSignalResumeArgs("100"), std::nullopt);
}

TEST(RequestsTest, SetThread) {
  auto h = ParseSetThread("gp0.0");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->op, SetThreadRequest::Op::kGeneral);
  EXPECT_EQ(h->thread, (ThreadSpec{WireId::Any(), WireId::Any()}));
  h = ParseSetThread("c-1");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->op, SetThreadRequest::Op::kContinue);
  EXPECT_EQ(h->thread, (ThreadSpec{std::nullopt, WireId::All()}));
  EXPECT_EQ(ParseSetThread("x1"), std::nullopt);
  EXPECT_EQ(ParseSetThread("g"), std::nullopt);
}

TEST(RequestsTest, XferRead) {
  EXPECT_EQ(ParseXferRead("target.xml:0,1000"), (XferReadRequest{"target.xml", 0, 0x1000}));
  EXPECT_EQ(ParseXferRead(":10,3fff"), (XferReadRequest{"", 0x10, 0x3fff}));
  EXPECT_EQ(ParseXferRead("target.xml"), std::nullopt);
  EXPECT_EQ(ParseXferRead("target.xml:0"), std::nullopt);
  EXPECT_EQ(ParseXferRead(":x,1"), std::nullopt);
}

TEST(RequestsTest, MonitorCommand) {
  EXPECT_EQ(ParseMonitorCommand("676f746f2035"), "goto 5");
  EXPECT_EQ(ParseMonitorCommand("676"), std::nullopt);
}

TEST(RequestsTest, SearchMemory) {
  auto s = ParseSearchMemory("400000;1000;0102");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->addr, 0x400000u);
  EXPECT_EQ(s->length, 0x1000u);
  EXPECT_EQ(s->pattern, "\x01\x02");
  for (std::string_view bad : {"", "400000;1000", "400000;1000;", "400000;1000;0", "x;1;01"}) {
    EXPECT_EQ(ParseSearchMemory(bad), std::nullopt) << bad;
  }
}

TEST(RequestsTest, QTFrame) {
  auto f = ParseQTFrame("3");
  ASSERT_TRUE(f && f->query);
  EXPECT_EQ(std::get<FrameByNumber>(*f->query).frame, 3u);
  f = ParseQTFrame("ffffffff");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->query, std::nullopt);
  f = ParseQTFrame("-1");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->query, std::nullopt);
  f = ParseQTFrame("pc:401008");
  ASSERT_TRUE(f && f->query);
  EXPECT_EQ(std::get<FrameByPc>(*f->query).pc, 0x401008u);
  f = ParseQTFrame("tdp:2");
  ASSERT_TRUE(f && f->query);
  EXPECT_EQ(std::get<FrameByTracepoint>(*f->query).tracepoint, 2u);
  f = ParseQTFrame("range:401000:401008");
  ASSERT_TRUE(f && f->query);
  EXPECT_EQ(std::get<FrameInRange>(*f->query).lo, 0x401000u);
  EXPECT_EQ(std::get<FrameInRange>(*f->query).hi, 0x401008u);
  f = ParseQTFrame("outside:401000:401008");
  ASSERT_TRUE(f && f->query);
  EXPECT_EQ(std::get<FrameOutsideRange>(*f->query).hi, 0x401008u);
  for (std::string_view bad : {"", "pc:", "range:1", "outside:1:", "80000000", "tdp:x", "q"}) {
    EXPECT_EQ(ParseQTFrame(bad), std::nullopt) << bad;
  }
}

TEST(RequestsTest, QSupported) {
  auto features = ParseQSupported(":multiprocess+;swbreak-;xmlRegisters=i386;foo?;;");
  ASSERT_TRUE(features);
  using K = ClientFeature::Kind;
  EXPECT_EQ(*features, (std::vector<ClientFeature>{{"multiprocess", K::kSupported, {}},
                                                   {"swbreak", K::kUnsupported, {}},
                                                   {"xmlRegisters", K::kValue, "i386"},
                                                   {"foo", K::kQuery, {}}}));
  EXPECT_EQ(ParseQSupported("")->size(), 0u);
  EXPECT_EQ(ParseQSupported(":bare"), std::nullopt);
  EXPECT_EQ(ParseQSupported("x"), std::nullopt);
}

TEST(RequestsTest, Detach) {
  EXPECT_EQ(ParseDetach("")->pid, std::nullopt);
  EXPECT_EQ(ParseDetach(";1")->pid, 1u);
  EXPECT_EQ(ParseDetach(";"), std::nullopt);
  EXPECT_EQ(ParseDetach("1"), std::nullopt);
}

}  // namespace
}  // namespace backstep::gdbstub
