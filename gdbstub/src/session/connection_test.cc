// Scripted replays of the gdb 13.1 and LLDB 19/22 connection sequences of
// docs/protocol.md §2, every reply checked, followed by a short debugging session.
#include <gtest/gtest.h>

#include "protocol/hex.h"
#include "session/session_test_util.h"
#include "testing/fake_target.h"

namespace backstep::gdbstub {
namespace {

// The ends of the history: LLDB's exception stop with its description, then
// gdb's replaylog key (gdb ignores the first, LLDB 22 prefers the second).
const std::string kHistoryBegin =
    "reason:exception;description:" + HexBytes("beginning of the recorded history") +
    ";replaylog:begin;";
const std::string kHistoryEnd =
    "reason:exception;description:" + HexBytes("end of the recorded history") + ";replaylog:end;";

constexpr std::string_view kQSupported =
    "PacketSize=4000;QStartNoAckMode+;qXfer:features:read+;qXfer:auxv:read+;"
    "qXfer:threads:read+;multiprocess+;swbreak+;hwbreak+;vContSupported+;"
    "ReverseStep+;ReverseContinue+";

std::string Expedited(std::uint64_t pc) {
  return "06:0700000000000000;07:0800000000000000;10:" + Le(pc, 8) + ";";
}

std::string RegisterBlock(std::uint64_t pc) {
  std::string out;
  for (int i = 0; i < 15; ++i) out += Le(i + 1, 8);
  return out + "xxxxxxxxxxxxxxxx" + Le(pc, 8) + Le(0x246, 4);
}

std::string MemoryHex(std::uint64_t addr, std::size_t length) {
  std::string out;
  for (std::size_t i = 0; i < length; ++i) out += Le((addr + i) & 0xff, 1);
  return out;
}

struct Step {
  std::string packet;
  std::string reply;
};

void Replay(Wire& wire, const std::vector<Step>& script) {
  for (const Step& step : script) EXPECT_EQ(wire.Ask(step.packet), step.reply) << step.packet;
}

TEST(ConnectionTest, Gdb13) {
  FakeTarget target;
  Wire wire(target);
  const std::string auxv("l!\0}\x03}\x04}]}\x0a\0\0", 13);
  // Acked: the first packets until QStartNoAckMode's OK.
  EXPECT_EQ(wire.Feed("+"), std::vector<std::string>{});
  Replay(wire, {
                   {"qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;fork-events+;"
                    "vfork-events+;exec-events+;vContSupported+;QThreadEvents+;no-resumed+;"
                    "memory-tagging+;xmlRegisters=i386",
                    std::string(kQSupported)},
                   {"vMustReplyEmpty", ""},
                   {"QStartNoAckMode", "OK"},
               });
  ASSERT_TRUE(wire.session.no_ack_mode());
  EXPECT_EQ(wire.Feed("+"), std::vector<std::string>{});  // gdb acks the OK
  Replay(
      wire,
      {
          {"Hgp0.0", "OK"},
          {"qXfer:features:read:target.xml:0,1000", "l" + target.documents["target.xml"]},
          {"qXfer:features:read:64bit-core.xml:0,1000", "l" + target.documents["64bit-core.xml"]},
          {"qTStatus", "T0;tnotrun:0;tframes:a;tcreated:a;tfree:0;tsize:0;circular:0;disconn:0"},
          {"qTfV", "l"},
          {"qTfP", "l"},
          {"?", "T05thread:p1.1;" + Expedited(0x401000)},
          {"qXfer:threads:read::0,1000",
           "l<?xml version=\"1.0\"?><threads><thread id=\"p1.1\" core=\"0\" "
           "name=\"main\"/><thread id=\"p1.2\" name=\"worker\"/></threads>"},
          {"qAttached:1", "1"},
          {"Hc-1", "OK"},
          {"qOffsets", ""},
          {"g", RegisterBlock(0x401000)},
          {"qXfer:auxv:read::0,1000", auxv},
          {"qSymbol::", "OK"},
          {"m400000,40", MemoryHex(0x400000, 0x40)},
          // stepi, continue to a breakpoint, reverse-stepi, reverse-continue.
          {"vCont;s:p1.1;c:p1.-1", "T05thread:p1.1;" + Expedited(0x401004)},
          {"Z0,401010,1", "OK"},
          {"vCont;c:p1.-1", "T05thread:p1.1;" + Expedited(0x401010) + "swbreak:;"},
          {"g", RegisterBlock(0x401010)},
          {"Hcp1.1", "OK"},
          {"bs", "T05thread:p1.1;" + Expedited(0x40100c)},
          {"bc", "T05thread:p1.1;" + Expedited(0x401000) + kHistoryBegin},
          {"z0,401010,1", "OK"},
          {"vCont;c:p1.-1", "T05thread:p1.1;" + Expedited(0x401014) + kHistoryEnd},
      });
  // `monitor info`: console output, then OK.
  EXPECT_EQ(wire.AskAll("qRcmd,696e666f"),
            (std::vector<std::string>{"O" + Hex("position 9\n"), "OK"}));
  EXPECT_EQ(wire.Ask("D;1"), "OK");
  EXPECT_TRUE(wire.session.finished());
}

TEST(ConnectionTest, Lldb19) {
  FakeTarget target;
  Wire wire(target);
  const std::string triple = Hex("x86_64-pc-linux-gnu");
  Replay(wire, {{"QStartNoAckMode", "OK"}});  // before qSupported
  ASSERT_TRUE(wire.session.no_ack_mode());
  EXPECT_EQ(wire.Feed("+"), std::vector<std::string>{});
  const std::string stop_threads = "threads:p1.1,p1.2;thread-pcs:401000,401000;";
  Replay(
      wire,
      {
          {"qSupported:xmlRegisters=i386,arm,mips,arc;multiprocess+;fork-events+;"
           "vfork-events+",
           std::string(kQSupported)},
          {"QThreadSuffixSupported", "OK"},
          {"QListThreadsInStopReply", "OK"},
          {"qHostInfo", "triple:" + triple +
                            ";ptrsize:8;endian:little;ostype:linux;"
                            "watchpoint_exceptions_received:after;"},
          {"vCont?", "vCont;c;C;s;S"},
          {"qVAttachOrWaitSupported", ""},
          {"QEnableErrorStrings", "OK"},
          {"qProcessInfo", "pid:1;triple:" + triple + ";ptrsize:8;endian:little;ostype:linux;"},
          {"qC", "QCp1.1"},
          {"?", "T05thread:p1.1;" + Expedited(0x401000) + stop_threads},
          {"qXfer:features:read:target.xml:0,3fff", "l" + target.documents["target.xml"]},
          {"qXfer:features:read:64bit-core.xml:0,3fff", "l" + target.documents["64bit-core.xml"]},
          {"Hgp1.1", "OK"},
          {"p0;thread:p1.1;", Le(1, 8)},
          {"p1;thread:p1.1;", Le(2, 8)},
          {"p10;thread:p1.1;", Le(0x401000, 8)},
          {"qOffsets", ""},
          {"qStructuredDataPlugins", ""},
          {"qXfer:auxv:read::0,3fff", std::string("l!\0}\x03}\x04}]}\x0a\0\0", 13)},
          {"qShlibInfoAddr", ""},
          {"x0,0", ""},
          {"m400000,200", MemoryHex(0x400000, 0x200)},
          {"m400e00,200", MemoryHex(0x400e00, 0x200)},
          {"m400f00,200", MemoryHex(0x400f00, 0x100)},  // readable prefix
          {"qMemoryRegionInfo:400000",
           "start:400000;size:1000;permissions:rx;name:" + Hex("/bin/prog") + ";"},
          {"jModulesInfo:[]", ""},
          {"qSymbol::", "OK"},
          {"Z0,401008,1", "OK"},
          {"qfThreadInfo", "mp1.1,p1.2"},
          {"qsThreadInfo", "l"},
          {"jThreadsInfo", ""},
          {"jThreadExtendedInfo:", ""},
          {"qWatchpointSupportInfo:", ""},
          // `thread step-inst`, `continue` (LLDB 19 did not offer swbreak+).
          {"vCont;s:p1.1",
           "T05thread:p1.1;" + Expedited(0x401004) + "threads:p1.1,p1.2;thread-pcs:401004,401004;"},
          {"c",
           "T05thread:p1.1;" + Expedited(0x401008) + "threads:p1.1,p1.2;thread-pcs:401008,401008;"},
          {"_M1000,rwx", ""},
          {"QSaveRegisterState;thread:p1.1;", ""},
          {"P10=0000000000000000;thread:p1.1;", "E01;" + Hex("the recording is read-only")},
      });
  EXPECT_EQ(wire.AskAll("qRcmd," + Hex("info")),
            (std::vector<std::string>{"O" + Hex("position 2\n"), "OK"}));
  EXPECT_EQ(wire.Ask("k"), "X09");
  EXPECT_TRUE(wire.session.finished());
}

TEST(ConnectionTest, Lldb22ReverseContinue) {
  FakeTarget target;
  Wire wire(target);
  const std::string features =
      "qSupported:xmlRegisters=i386,arm,mips,arc;multiprocess+;fork-events+;vfork-events+;"
      "swbreak+;hwbreak+";
  Replay(wire, {{"QStartNoAckMode", "OK"},
                {features, std::string(kQSupported)},
                {"QThreadSuffixSupported", "OK"},
                {"Z0,401004,1", "OK"},
                {"c", "T05thread:p1.1;" + Expedited(0x401004) + "swbreak:;"},
                {"c", "T05thread:p1.1;" + Expedited(0x401004) + "swbreak:;"},
                {features, std::string(kQSupported)},  // sent a second time later
                // `process continue --reverse` from the breakpoint: it is skipped.
                {"bc", "T05thread:p1.1;" + Expedited(0x401004) + "swbreak:;"},
                {"bc", "T05thread:p1.1;" + Expedited(0x401000) + kHistoryBegin}});
}

}  // namespace
}  // namespace backstep::gdbstub
