// SpoolSink and ReplaySpool (spool_sink.h): what a worker writes is what
// the join replays, call for call and byte for byte (registers with zero
// tails, wide registers, writes and reads, system calls with mappings,
// signals, the end), and a damaged spool is refused with its offset.
#include "recorder/native/spool_sink.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace backstep::record {
namespace {

// Keeps every call as text (spans do not outlive the call).
class TextSink final : public RecordingSink {
 public:
  core::Status OnStart(const StartInfo&) override { return core::Status::Ok(); }
  void OnInstruction(const InstructionRecord& insn) override {
    calls.push_back("insn " + std::to_string(insn.pc) + " " + std::to_string(insn.size) + " " +
                    Registers(insn.registers) + Memory(insn.writes) + "|" + Memory(insn.reads));
  }
  void OnSyscall(const SyscallRecord& sys) override {
    std::string s = "sys " + std::to_string(sys.number) + " " + std::to_string(sys.result);
    for (std::uint64_t a : sys.args) s += " " + std::to_string(a);
    for (const auto* maps : {&sys.unmapped, &sys.mapped, &sys.protected_}) {
      s += " [";
      for (const Mapping& m : *maps)
        s += std::to_string(m.start) + "+" + std::to_string(m.size) + (m.read ? "r" : "") +
             (m.write ? "w" : "") + (m.exec ? "x" : "") + "@" + std::to_string(m.file_offset) +
             m.name + ";";
      s += "]";
    }
    calls.push_back(s + Memory(sys.writes) + Registers(sys.registers));
  }
  void OnSignal(const SignalRecord& signal) override {
    calls.push_back("sig " + std::to_string(signal.signal) + " " + std::to_string(signal.handler) +
                    " " + std::to_string(signal.siginfo.size()) + Registers(signal.registers) +
                    Memory(signal.writes));
  }
  core::Status Finish(bool) override { return core::Status::Ok(); }
  std::vector<std::string> calls;

 private:
  static std::string Registers(std::span<const core::RegisterWrite> regs) {
    std::string s = " regs";
    for (const core::RegisterWrite& r : regs) {
      s += " " + std::to_string(r.reg) + ":" + std::to_string(int(r.op)) + ":";
      for (std::uint8_t b : r.value) s += std::to_string(b) + ".";
    }
    return s;
  }
  static std::string Memory(std::span<const core::MemoryAccess> accesses) {
    std::string s = " mem";
    for (const core::MemoryAccess& a : accesses) {
      s += " " + std::to_string(a.address) + "=";
      for (std::uint8_t b : a.data) s += std::to_string(b) + ".";
    }
    return s;
  }
};

// The calls of a small run, made on `sink`.
void MakeCalls(RecordingSink& sink) {
  std::vector<core::RegisterWrite> regs(3);
  regs[0].reg = 0;  // an 8-byte value: 56 zero bytes after it
  regs[0].value[0] = 0x34, regs[0].value[1] = 0x12;
  regs[1].reg = 40;  // all 64 bytes set (a zmm register)
  for (int i = 0; i < 64; ++i) regs[1].value[i] = static_cast<std::uint8_t>(i + 1);
  regs[2].reg = 7;  // all zero
  regs[2].op = core::RegisterOp::kAdd;
  const std::vector<std::uint8_t> bytes = {1, 2, 3, 0, 5}, big(300, 0xab);
  const std::vector<core::MemoryAccess> writes = {{0x7ffe0000, bytes}, {0x1000, big}};
  const std::vector<core::MemoryAccess> reads = {{0x2000, std::span(bytes).first(2)}};
  sink.OnInstruction({0x401000, 3, regs, writes, reads});
  sink.OnInstruction({0x401003, 15, {}, {}, {}});
  SyscallRecord sys;
  sys.number = 9;
  sys.result = 0x7f0000000000;
  for (int i = 0; i < 6; ++i) sys.args[i] = 100u + static_cast<unsigned>(i);
  const std::vector<Mapping> mapped = {{0x7f0000000000, 8192, true, true, false, 4096, "/lib/x"}};
  sys.mapped = mapped;
  sys.writes = writes;
  sys.registers = std::span(regs).first(1);
  sink.OnSyscall(sys);
  const std::vector<std::uint8_t> siginfo(128, 7);
  sink.OnSignal({11, 0x401100, siginfo, regs, writes});
}

std::string TempPath(const char* name) {
  return ::testing::TempDir() + "/" + name + std::to_string(getpid());
}

TEST(SpoolSink, ReplayMakesTheSameCalls) {
  const std::string path = TempPath("spool-roundtrip");
  core::Expected<std::unique_ptr<SpoolSink>> spool = SpoolSink::Create(path, false);
  ASSERT_TRUE(spool.ok()) << spool.status().message();
  MakeCalls(**spool);
  (*spool)->OnKilled(11);
  ASSERT_TRUE((*spool)->Finish(true).ok());
  TextSink direct, replayed;
  MakeCalls(direct);
  core::Expected<SpoolCounts> counts = ReplaySpool(path, replayed, false);
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  EXPECT_EQ(replayed.calls, direct.calls);
  EXPECT_EQ(counts->positions, 3u);  // two instructions and the signal
  EXPECT_TRUE(counts->finished);
  EXPECT_TRUE(counts->exited);
  EXPECT_EQ(counts->killed, 11);
  std::remove(path.c_str());
}

TEST(SpoolSink, DamagedSpoolIsRefusedWithItsOffset) {
  const std::string path = TempPath("spool-damaged");
  core::Expected<std::unique_ptr<SpoolSink>> spool = SpoolSink::Create(path, false);
  ASSERT_TRUE(spool.ok());
  MakeCalls(**spool);
  ASSERT_TRUE((*spool)->Finish(true).ok());
  const off_t whole = [&] {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    std::fseek(f, 0, SEEK_END);
    const long n = std::ftell(f);
    std::fclose(f);
    return static_cast<off_t>(n);
  }();
  // Cut inside the 300-byte write of the first instruction (its count no
  // longer fits), then inside the second instruction's record.
  ASSERT_EQ(truncate(path.c_str(), 200), 0);
  TextSink sink;
  core::Expected<SpoolCounts> cut = ReplaySpool(path, sink, false);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().message(), "spool " + path + ": count 300 too large at offset 114");
  EXPECT_TRUE(sink.calls.empty());
  ASSERT_EQ(truncate(path.c_str(), 0), 0);
  core::Expected<std::unique_ptr<SpoolSink>> again = SpoolSink::Create(path, false);
  ASSERT_TRUE(again.ok());
  (*again)->OnInstruction({0x401000, 3, {}, {}, {}});
  (*again)->OnInstruction({0x401003, 2, {}, {}, {}});
  ASSERT_TRUE((*again)->Finish(true).ok());
  ASSERT_EQ(truncate(path.c_str(), 16), 0);  // 13 bytes each: tag, pc, size, two counts
  core::Expected<SpoolCounts> short_record = ReplaySpool(path, sink, false);
  ASSERT_FALSE(short_record.ok());
  EXPECT_EQ(short_record.status().message(), "spool " + path + ": truncated at offset 14");
  EXPECT_EQ(sink.calls.size(), 1u);
  // A count larger than what is left: refused before anything is allocated.
  ASSERT_EQ(truncate(path.c_str(), 0), 0);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  const unsigned char huge[] = {'I', 0, 0x10, 0, 0, 0, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff, 0x0f};
  std::fwrite(huge, 1, sizeof huge, f);
  std::fclose(f);
  core::Expected<SpoolCounts> bad = ReplaySpool(path, sink, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("too large at offset"), std::string::npos)
      << bad.status().message();
  EXPECT_GT(whole, 200);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace backstep::record
