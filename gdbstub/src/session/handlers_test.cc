// Exact replies of every non-resume handler against FakeTarget.
#include <gtest/gtest.h>

#include "session/session_test_util.h"
#include "testing/fake_target.h"

namespace backstep::gdbstub {
namespace {

constexpr std::string_view kFullQSupported =
    "PacketSize=4000;QStartNoAckMode+;qXfer:features:read+;qXfer:auxv:read+;"
    "qXfer:threads:read+;multiprocess+;swbreak+;hwbreak+;vContSupported+;"
    "ReverseStep+;ReverseContinue+";

std::string RegisterBlock(std::uint64_t pc) {
  std::string out;
  for (int i = 0; i < 15; ++i) out += Le(i + 1, 8);
  out += "xxxxxxxxxxxxxxxx" + Le(pc, 8) + Le(0x246, 4);
  return out;
}

TEST(HandlersTest, QSupportedAdvertisesExactlyTheCapabilities) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("qSupported:multiprocess+;swbreak+"), kFullQSupported);
  EXPECT_TRUE(wire.session.state().negotiated.multiprocess);
  EXPECT_TRUE(wire.session.state().negotiated.swbreak);
  EXPECT_FALSE(wire.session.state().negotiated.hwbreak);

  FakeTarget bare;
  bare.caps = {false, false, false, false, false, false, false, false, false};
  Wire bare_wire(bare);
  EXPECT_EQ(bare_wire.Ask("qSupported:swbreak+;hwbreak+"),
            "PacketSize=4000;QStartNoAckMode+;qXfer:features:read+;qXfer:threads:read+;"
            "multiprocess+;vContSupported+");
  EXPECT_FALSE(bare_wire.session.state().negotiated.swbreak);  // no breakpoints to report
  EXPECT_EQ(bare_wire.Ask("qSupported:bogus"), "E16");
}

TEST(HandlersTest, HandshakeOptIns) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("vMustReplyEmpty"), "");
  EXPECT_EQ(wire.Ask("QThreadSuffixSupported"), "OK");
  EXPECT_EQ(wire.Ask("QListThreadsInStopReply"), "OK");
  EXPECT_EQ(wire.Ask("QEnableErrorStrings"), "OK");
  const Negotiated& n = wire.session.state().negotiated;
  EXPECT_TRUE(n.thread_suffix && n.list_threads_in_stop_reply && n.error_strings);
}

TEST(HandlersTest, Registers) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("g"), RegisterBlock(0x401000));
  EXPECT_EQ(wire.Ask("p10"), "0010400000000000");
  EXPECT_EQ(wire.Ask("pf"), "xxxxxxxxxxxxxxxx");
  EXPECT_EQ(wire.Ask("p11"), "46020000");
  EXPECT_EQ(wire.Ask("p12"), "E01");
  EXPECT_EQ(wire.Ask("p6;thread:2;"), "0700000000000000");
  EXPECT_EQ(wire.Ask("p6;thread:9;"), "E01");
  EXPECT_EQ(wire.Ask("g;thread:p1.2;"), RegisterBlock(0x401000));
  EXPECT_EQ(wire.Ask("pzz"), "E16");
}

TEST(HandlersTest, RegisterThreadSelection) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("Hg2"), "OK");
  EXPECT_EQ(wire.session.state().general_thread, core::ThreadId(2));
  EXPECT_EQ(wire.Ask("Hgp0.0"), "OK");
  EXPECT_EQ(wire.session.state().general_thread, std::nullopt);
  EXPECT_EQ(wire.Ask("Hg9"), "E01");
  EXPECT_EQ(wire.Ask("Hgp2.1"), "E01");  // not our pid
  EXPECT_EQ(wire.Ask("Hc-1"), "OK");
  EXPECT_EQ(wire.Ask("Hcp1.2"), "OK");
  EXPECT_EQ(wire.session.state().continue_thread, core::ThreadId(2));
  EXPECT_EQ(wire.Ask("Hx1"), "E16");
}

TEST(HandlersTest, MemoryReadsTheReadablePrefix) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("m400000,4"), "00010203");
  EXPECT_EQ(wire.Ask("m400ffe,4"), "feff");  // runs into unmapped memory
  EXPECT_EQ(wire.Ask("m3fffff,2"), "E01");   // first byte unreadable
  EXPECT_EQ(wire.Ask("m400000,0"), "");
  EXPECT_EQ(wire.Ask("m400000"), "E16");
  EXPECT_EQ(wire.Ask("x0,0"), "");  // LLDB then reads with m
}

TEST(HandlersTest, WritesAreRefusedAndInferiorChangesDeclined) {
  FakeTarget target;
  Wire wire(target);
  for (std::string_view write : {"G00", "P10=0000000000000000", "M400000,1:00", "X400000,1:a"}) {
    EXPECT_EQ(wire.Ask(write), "E01") << write;
  }
  for (std::string_view declined :
       {"_M1000,rwx", "_m10000", "QSaveRegisterState", "QSaveRegisterState;thread:1;",
        "QRestoreRegisterState:1", "qOffsets", "jThreadsInfo", "qWatchpointSupportInfo:",
        "qShlibInfoAddr", "qVAttachOrWaitSupported", "vCont", "qCRC:0,1"}) {
    EXPECT_EQ(wire.Ask(declined), "") << declined;
  }
}

TEST(HandlersTest, BreakpointsAndWatchpoints) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("Z0,401008,1"), "OK");
  EXPECT_EQ(wire.Ask("Z1,40100c,1"), "OK");
  EXPECT_EQ(target.inserted_breakpoints.size(), 2u);
  EXPECT_EQ(wire.Ask("z0,401008,1"), "OK");
  EXPECT_EQ(wire.Ask("z1,40100c,1"), "OK");
  EXPECT_TRUE(target.inserted_breakpoints.empty());
  EXPECT_EQ(wire.Ask("Z2,404000,8"), "OK");
  EXPECT_EQ(wire.Ask("z2,404000,8"), "OK");
  EXPECT_EQ(wire.Ask("Z3,404000,8"), "");  // reads are not recorded
  EXPECT_EQ(wire.Ask("Z4,404000,8"), "");
  EXPECT_EQ(wire.Ask("Z2,404000,0"), "E16");
  EXPECT_EQ(wire.Ask("Z0,zz,1"), "E16");
  target.caps.read_watchpoints = true;
  EXPECT_EQ(wire.Ask("Z3,404000,8"), "OK");
  target.caps.breakpoints = target.caps.watchpoints = false;
  EXPECT_EQ(wire.Ask("Z0,401008,1"), "");
  EXPECT_EQ(wire.Ask("Z2,404000,8"), "");
}

TEST(HandlersTest, Threads) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("qfThreadInfo"), "m1,2");
  EXPECT_EQ(wire.Ask("qsThreadInfo"), "l");
  EXPECT_EQ(wire.Ask("qC"), "QC1");
  EXPECT_EQ(wire.Ask("T1"), "OK");
  EXPECT_EQ(wire.Ask("Tp1.2"), "OK");
  EXPECT_EQ(wire.Ask("T3"), "E01");
  EXPECT_EQ(wire.Ask("qThreadExtraInfo,1"), Hex("main"));
  EXPECT_EQ(wire.Ask("qThreadExtraInfo,7"), "E01");
  wire.Ask("qSupported:multiprocess+");
  EXPECT_EQ(wire.Ask("qfThreadInfo"), "mp1.1,p1.2");
  EXPECT_EQ(wire.Ask("qC"), "QCp1.1");
}

TEST(HandlersTest, LongThreadListsAreChunked) {
  FakeTarget target;
  target.threads.clear();
  for (int i = 1; i <= 40; ++i) target.threads.push_back({core::ThreadId(i), "", std::nullopt});
  Wire wire(target, SessionOptions{.packet_size = 32});
  std::string all;
  for (std::string reply = wire.Ask("qfThreadInfo"); reply != "l";
       reply = wire.Ask("qsThreadInfo")) {
    ASSERT_EQ(reply[0], 'm');
    ASSERT_LE(reply.size(), 32u);
    all += (all.empty() ? "" : ",") + reply.substr(1);
  }
  EXPECT_EQ(all.substr(0, 8), "1,2,3,4,");
  EXPECT_EQ(all.substr(all.size() - 5), "27,28");  // 0x28 = 40
}

TEST(HandlersTest, XferDocuments) {
  FakeTarget target;
  Wire wire(target);
  const std::string& xml = target.documents["target.xml"];
  EXPECT_EQ(wire.Ask("qXfer:features:read:target.xml:0,1000"), "l" + xml);
  EXPECT_EQ(wire.Ask("qXfer:features:read:target.xml:0,10"), "m" + xml.substr(0, 16));
  EXPECT_EQ(wire.Ask("qXfer:features:read:target.xml:10,1000"), "l" + xml.substr(16));
  EXPECT_EQ(wire.Ask("qXfer:features:read:64bit-core.xml:0,3fff"),
            "l<feature name=\"org.gnu.gdb.i386.core\"/>");
  EXPECT_EQ(wire.Ask("qXfer:features:read:nope.xml:0,1000"), "E01");
  EXPECT_EQ(wire.Ask("qXfer:auxv:read::0,1000"), std::string("l!\0}\x03}\x04}]}\x0a\0\0", 13));
  EXPECT_EQ(wire.Ask("qXfer:auxv:read::4,2"), "m}]}\x0a");
  EXPECT_EQ(wire.Ask("qXfer:threads:read::0,1000"),
            "l<?xml version=\"1.0\"?><threads><thread id=\"1\" core=\"0\" name=\"main\"/>"
            "<thread id=\"2\" name=\"worker\"/></threads>");
  EXPECT_EQ(wire.Ask("qXfer:memory-map:read::0,1000"), "");
  target.caps.auxv = false;
  EXPECT_EQ(wire.Ask("qXfer:auxv:read::0,1000"), "");
}

TEST(HandlersTest, XferExecFile) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("qSupported").find("qXfer:exec-file:read+"), std::string::npos);
  EXPECT_EQ(wire.Ask("qXfer:exec-file:read:1:0,fff"), "");  // not routed
  target.exec_path = "/work/bin/prog";
  EXPECT_NE(wire.Ask("qSupported").find(";qXfer:exec-file:read+;"), std::string::npos);
  EXPECT_EQ(wire.Ask("qXfer:exec-file:read:1:0,fff"), "l/work/bin/prog");  // gdb: pid annex
  EXPECT_EQ(wire.Ask("qXfer:exec-file:read::0,fff"), "l/work/bin/prog");   // no annex
  EXPECT_EQ(wire.Ask("qXfer:exec-file:read:1:6,4"), "mbin/");
  EXPECT_EQ(wire.Ask("qXfer:exec-file:read:1:e,4"), "l");
  EXPECT_EQ(wire.Ask("qXfer:exec-file:read:zz:0,fff"), "E01");
}

TEST(HandlersTest, ProcessAndHostQueries) {
  FakeTarget target;
  Wire wire(target);
  const std::string triple = Hex("x86_64-pc-linux-gnu");
  EXPECT_EQ(wire.Ask("qAttached"), "1");
  EXPECT_EQ(wire.Ask("qAttached:1"), "1");
  EXPECT_EQ(wire.Ask("qSymbol::"), "OK");
  EXPECT_EQ(wire.Ask("qHostInfo"), "triple:" + triple +
                                       ";ptrsize:8;endian:little;ostype:linux;"
                                       "watchpoint_exceptions_received:after;");
  EXPECT_EQ(wire.Ask("qProcessInfo"),
            "pid:1;triple:" + triple + ";ptrsize:8;endian:little;ostype:linux;");
  target.caps.host_info = false;
  EXPECT_EQ(wire.Ask("qHostInfo"), "");
  EXPECT_EQ(wire.Ask("qProcessInfo"), "");
}

TEST(HandlersTest, MemoryRegions) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("qMemoryRegionInfo:400010"),
            "start:400000;size:1000;permissions:rx;name:" + Hex("/bin/prog") + ";");
  EXPECT_EQ(wire.Ask("qMemoryRegionInfo:10"), "start:0;size:400000;");
  EXPECT_EQ(wire.Ask("qMemoryRegionInfo:500000"), "start:401000;size:ffffffffffbff000;");
  EXPECT_EQ(wire.Ask("qMemoryRegionInfo:"), "E16");
  target.caps.memory_map = false;
  EXPECT_EQ(wire.Ask("qMemoryRegionInfo:400010"), "");
}

TEST(HandlersTest, SearchMemory) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("qSearch:memory:400000;1000;1011"), "1,400010");
  EXPECT_EQ(wire.Ask("qSearch:memory:400000;1000;ffee"), "0");
  EXPECT_EQ(wire.Ask("qSearch:memory:400000;2000;ffee"), "E01");  // halts at unreadable bytes
  EXPECT_EQ(wire.Ask("qSearch:memory:400000;1000;"), "E16");
  Wire small(target, SessionOptions{.packet_size = 0x100});
  EXPECT_EQ(small.Ask("qSearch:memory:400000;1000;ff00"), "1,4000ff");  // across chunks
  EXPECT_EQ(small.Ask("qSearch:memory:400001;ffffffffffffffff;0001"), "1,400100");
}

TEST(HandlersTest, MonitorCommands) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.AskAll("qRcmd," + Hex("info")),
            (std::vector<std::string>{"O" + Hex("position 0\n"), "OK"}));
  EXPECT_EQ(wire.AskAll("qRcmd," + Hex("quiet")), std::vector<std::string>{"OK"});
  // An error reply is preceded by its reason on the console (gdb shows only
  // "Protocol error with Rcmd" for the E reply itself).
  std::vector<std::string> bogus = wire.AskAll("qRcmd," + Hex("bogus"));
  ASSERT_EQ(bogus.size(), 2u);
  EXPECT_EQ(bogus[0].substr(0, 1), "O");
  EXPECT_EQ(bogus[1], "E16");
  EXPECT_EQ(wire.Ask("qRcmd,xyz"), "E16");
  EXPECT_EQ(wire.AskAll("qRcmd," + Hex("echo hi")),
            (std::vector<std::string>{"O" + Hex("hi"), "OK"}));
  Wire small(target, SessionOptions{.packet_size = 64});  // 31 bytes of text per O packet
  const std::string x31 = Hex(std::string(31, 'x'));
  EXPECT_EQ(
      small.AskAll("qRcmd," + Hex("many")),
      (std::vector<std::string>{"O" + x31, "O" + x31, "O" + x31, "O" + Hex("xxxxxxx"), "OK"}));
  target.caps.monitor = false;
  EXPECT_EQ(wire.Ask("qRcmd," + Hex("info")), "");
}

// A trace recorded by tracepoints: its definitions are uploaded one per
// packet, its status line is qTStatus, its variables and collections answer
// at the selected frame.
TEST(HandlersTest, TracepointUploadStatusAndVariables) {
  FakeTarget target;
  target.definitions = core::TracepointDefinitions{
      {"T2:401132:E:0:0", "A2:401132:M-1,404040,8", "V2:401132:5:a0"},
      {"2:0:0:68697473"},
      "0;tstop:0;tframes:f;tcreated:f;tfree:4f9c91;tsize:500000;circular:0;disconn:0"};
  Wire wire(target);
  EXPECT_NE(wire.Ask("qSupported:multiprocess+").find(";qXfer:traceframe-info:read+"),
            std::string::npos);
  EXPECT_EQ(wire.Ask("qTStatus"),
            "T0;tstop:0;tframes:f;tcreated:f;tfree:4f9c91;tsize:500000;circular:0;disconn:0");
  EXPECT_EQ(wire.Ask("qTfP"), "T2:401132:E:0:0");
  EXPECT_EQ(wire.Ask("qTsP"), "A2:401132:M-1,404040,8");
  EXPECT_EQ(wire.Ask("qTsP"), "V2:401132:5:a0");
  EXPECT_EQ(wire.Ask("qTsP"), "l");
  EXPECT_EQ(wire.Ask("qTsP"), "l");
  EXPECT_EQ(wire.Ask("qTfP"), "T2:401132:E:0:0");  // starts over
  EXPECT_EQ(wire.Ask("qTfV"), "2:0:0:68697473");
  EXPECT_EQ(wire.Ask("qTsV"), "l");
  EXPECT_EQ(wire.Ask("qTP:2:401132"), "V5:a0");
  EXPECT_EQ(wire.Ask("qTP:3:401132"), "");
  EXPECT_EQ(wire.Ask("qTV:2"), "U");  // no frame selected
  EXPECT_EQ(wire.Ask("qXfer:traceframe-info:read::0,fff"), "E01");
  EXPECT_EQ(wire.Ask("QTFrame:3"), "F3T2");
  EXPECT_EQ(wire.Ask("qTV:2"), "Vfffffffffffffffd");  // -3
  EXPECT_EQ(wire.Ask("qTV:7"), "U");
  EXPECT_EQ(wire.Ask("qTV:zz"), "E16");
  EXPECT_EQ(wire.Ask("qXfer:traceframe-info:read::0,fff"),
            "l<traceframe-info><tvar id=\"2\"/></traceframe-info>");
  EXPECT_EQ(wire.Ask("qXfer:traceframe-info:read:x:0,fff"), "E01");
}

TEST(HandlersTest, TraceFrames) {
  FakeTarget target;
  Wire wire(target);
  EXPECT_EQ(wire.Ask("qTStatus"),
            "T0;tnotrun:0;tframes:a;tcreated:a;tfree:0;tsize:0;circular:0;disconn:0");
  for (std::string_view list : {"qTfP", "qTsP", "qTfV", "qTsV"}) EXPECT_EQ(wire.Ask(list), "l");
  EXPECT_EQ(wire.Ask("QTFrame:3"), "F3T2");
  EXPECT_EQ(wire.Ask("p10"), "0c10400000000000");  // reads answer at frame 3
  EXPECT_EQ(wire.Ask("QTFrame:3"), "F3T2");        // resync is idempotent
  EXPECT_EQ(wire.Ask("QTFrame:pc:401008"), "F6T1");
  EXPECT_EQ(wire.Ask("QTFrame:pc:401008"), "F-1");  // none after frame 6
  EXPECT_EQ(wire.session.state().selected_frame, 6u);
  EXPECT_EQ(wire.Ask("QTFrame:tdp:2"), "F7T2");
  EXPECT_EQ(wire.Ask("QTFrame:range:401000:401004"), "F-1");
  EXPECT_EQ(wire.Ask("QTFrame:outside:401004:401010"), "F9T2");
  EXPECT_EQ(wire.Ask("s"), "E01");  // no run control while looking at a frame
  EXPECT_EQ(wire.Ask("QTFrame:63"), "F-1");
  EXPECT_EQ(wire.Ask("QTFrame:ffffffff"), "F-1");
  EXPECT_EQ(wire.session.state().selected_frame, std::nullopt);
  EXPECT_EQ(wire.Ask("p10"), "0010400000000000");  // back at the cursor
  EXPECT_EQ(wire.Ask("QTFrame:range:401004:401008"), "F1T2");
  EXPECT_EQ(wire.Ask("QTFrame:zz"), "E16");
  target.caps.trace_frames = false;
  EXPECT_EQ(wire.Ask("qTStatus"), "");
  EXPECT_EQ(wire.Ask("QTFrame:3"), "");
}

}  // namespace
}  // namespace backstep::gdbstub
