// backstep_make_avx512 OUT: writes a small x86-64 usercorn trace whose
// keyframe holds AVX-512 state (k0-k7 and xmm16-31 known, as `backstep
// record` writes them on an AVX-512 machine) and prints its facts, one
// "key value" line each: k<N> and xmm17 (hex), events. For the tests of the
// register set every front end serves (tests/e2e/test_lldb_plugin.py), on
// machines without AVX-512 too.
#include <array>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "backstep/core/usercorn_recording.h"

namespace {

namespace core = backstep::core;

constexpr core::Address kCode = 0x401000, kStack = 0x7ffffffde000;
constexpr std::uint64_t kStackSize = 0x21000;
constexpr std::uint16_t kRsp = 44, kRbp = 36, kFirstK = 90, kFirstXmm16 = 138;
constexpr int kInstructions = 4;

std::uint64_t KValue(int n) { return 0x4020 + 0x101 * static_cast<std::uint64_t>(n); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: %s OUT\n", argv[0]);
    return 2;
  }
  auto writer = core::CreateUsercornRecording(argv[1]);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    return 1;
  }
  std::vector<core::UsercornRegisterValue> regs = {{kRsp, kStack + kStackSize - 0x100},
                                                   {kRbp, kStack + kStackSize - 0x80}};
  for (int k = 0; k < 8; ++k) regs.push_back({static_cast<std::uint16_t>(kFirstK + k), KValue(k)});
  // xmm16-31: byte i of xmmN is N * 16 + i.
  std::vector<std::array<std::uint8_t, 16>> xmm(16);
  std::vector<core::UsercornRecordingWriter::SpecialRegister> special;
  for (int n = 0; n < 16; ++n) {
    for (int i = 0; i < 16; ++i) xmm[n][i] = static_cast<std::uint8_t>((16 + n) * 16 + i);
    special.emplace_back(static_cast<std::uint16_t>(kFirstXmm16 + n), xmm[n]);
  }
  std::vector<core::UsercornMapping> maps(2);
  maps[0].address = kCode, maps[0].size = 0x1000, maps[0].desc = "code";
  maps[0].prot = core::kProtRead | core::kProtExec;
  maps[1].address = kStack, maps[1].size = kStackSize, maps[1].desc = "[stack]";
  maps[1].prot = core::kProtRead | core::kProtWrite;
  auto read = [](const core::UsercornMapping& m, std::vector<std::uint8_t>* data) {
    if (m.address == kCode) data->assign(kInstructions, 0x90);  // nop
    return core::Status::Ok();
  };
  auto& w = **writer;
  if (core::Status s = w.Begin(1, regs, maps, read, kCode, special); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  for (int i = 0; i < kInstructions; ++i) {
    core::UsercornInstruction insn;
    insn.pc = kCode + i;
    insn.size = 1;
    w.AppendInstruction(insn);
  }
  if (core::Status s = w.Finish(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  for (int k = 0; k < 8; ++k) {
    std::printf("k%d 0x%llx\n", k, static_cast<unsigned long long>(KValue(k)));
  }
  std::printf("xmm17 0x");
  for (int i = 15; i >= 0; --i) std::printf("%02x", xmm[1][i]);
  std::printf("\nevents %d\n", kInstructions);
  return 0;
}
