// backstep_serve_reads_trace DIR: serves, on 127.0.0.1 (a free port), a
// two-thread x86-64 trace that records the values its instructions read,
// for the rwatch/awatch scenarios of tests/e2e/test_threads_reads.py. No
// file format backstep reads records reads yet (usercorn's MEM_READ holds no
// value; x64dbg and BAP will), so the trace is core/src/testing's fake
// format, written to DIR/reads.fake and opened with its index like a real
// file. Prints its facts ("key value" lines), then "listening on
// 127.0.0.1:PORT", on stdout; runs until SIGINT or SIGTERM.
//
// The program: `var` (4 bytes, initially 5) is read by thread 1 (event
// read1), written with 7 by thread 2 (event write), read by thread 2 (read2)
// and by thread 1 (read3); the other events only move rip.
#include <cstdio>
#include <string>

#include "backstep/core/arch.h"
#include "backstep/gdbstub/server.h"
#include "backstep/gdbstub/trace_target.h"
#include "backstep/testing/fake_trace.h"

namespace {

using namespace backstep;
using core::ThreadId;

constexpr core::Address kVar = 0x10000;

core::RegisterWrite SetU64(core::RegisterId reg, std::uint64_t v) {
  core::RegisterWrite w;
  w.reg = reg;
  for (int i = 0; i < 8; ++i) w.value[i] = static_cast<std::uint8_t>(v >> (8 * i));
  return w;
}

std::vector<std::uint8_t> Le32(std::uint32_t v) {
  return {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8),
          static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 24)};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const core::ArchDescription& arch = core::X86_64();
  core::testing::FakeTrace fake;
  fake.records_reads = true;
  std::uint64_t rip[3] = {0, 0x401000, 0x402000};
  for (std::uint64_t t : {1, 2}) {
    core::RegisterFile regs(arch);
    regs.SetU64(arch.pc(), rip[t]);
    regs.SetU64(arch.sp(), 0x7fff0000 + 0x1000 * t);
    fake.initial_registers.emplace_back(ThreadId(t), regs);
  }
  core::testing::FakeImageRegion data;
  data.start = kVar;
  data.bytes.assign(0x100, 0);
  data.known.assign(0x100, 1);
  data.bytes[0] = 5;
  fake.image.push_back(data);
  std::vector<std::pair<std::string, std::uint64_t>> facts = {{"var", kVar}};
  auto event = [&](std::uint64_t t, const char* name, bool read, std::uint32_t value, bool write) {
    core::testing::FakeEvent e;
    e.thread = ThreadId(t);
    rip[t] += 4;
    e.registers.push_back(SetU64(arch.pc(), rip[t]));
    if (read) e.reads.push_back({kVar, Le32(value)});
    if (write) e.writes.push_back({kVar, Le32(value)});
    if (name != nullptr) facts.emplace_back(name, fake.events.size());
    fake.events.push_back(std::move(e));
  };
  event(1, nullptr, false, 0, false);
  event(1, "read1", true, 5, false);
  event(2, nullptr, false, 0, false);
  event(2, "write", false, 7, true);
  event(1, nullptr, false, 0, false);
  event(2, "read2", true, 7, false);
  event(1, "read3", true, 7, false);
  event(1, nullptr, false, 0, false);
  facts.emplace_back("events", fake.events.size());

  const std::string path = std::string(argv[1]) + "/reads.fake";
  if (auto s = core::testing::WriteFakeTraceFile(fake, path); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  auto trace = core::testing::OpenFakeFile(path);
  if (!trace.ok()) {
    std::fprintf(stderr, "%s\n", trace.status().ToString().c_str());
    return 1;
  }
  std::shared_ptr<const core::Trace> shared = *trace;
  gdbstub::ServerOptions options;
  options.stop_on_signals = true;
  auto server =
      gdbstub::Server::Create([shared] { return gdbstub::NewTraceTarget(shared); }, options);
  if (!server.ok()) return 1;
  auto port = (*server)->ListenTcp("127.0.0.1", 0);
  if (!port.ok()) {
    std::fprintf(stderr, "%s\n", port.status().ToString().c_str());
    return 1;
  }
  for (const auto& [key, value] : facts) {
    std::printf("%s %llu\n", key.c_str(), static_cast<unsigned long long>(value));
  }
  std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  (*server)->Run();
  return 0;
}
