// Fuzzes the x64dbg reader: arbitrary bytes opened as a .trace64/.trace32
// from memory.
//
// Exercises what a consumer does with a reader: the header and initial
// registers, every event (applied to per-thread register files, so decoded
// writes must be well formed), Tell/Seek back into the middle and to the
// first event, and the resume points (a second decoding pass). Events are
// capped so a valid but long input cannot hang the run.
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "backstep/testing/reader_fuzz.h"
#include "formats/x64dbg/x64dbg_reader.h"
#include "testing/reader_probes.h"

namespace {

using backstep::core::Event;
using backstep::core::RegisterFile;
using backstep::core::X64dbgReader;

constexpr int kMaxEvents = 20000;

}  // namespace

namespace backstep::core::testing {

int FuzzX64dbgReader(const std::uint8_t* data, std::size_t size) {
  auto opened = X64dbgReader::Open(
      backstep::core::MemorySource(std::vector<std::uint8_t>(data, data + size), "fuzz.trace64"));
  if (!opened.ok()) return 0;
  X64dbgReader& reader = **opened;
  backstep::core::testing::ProbeInitialMemory(reader);
  std::map<std::uint64_t, RegisterFile> regs;
  for (auto& [tid, file] : reader.InitialRegisters()) regs.emplace(tid.value, file);
  const auto first = reader.Tell();
  auto middle = first;
  Event e;
  for (int i = 0; i < kMaxEvents; ++i) {
    if (i == 5) middle = reader.Tell();
    auto more = reader.Next(&e);
    if (!more.ok() || !*more) break;
    RegisterFile& file = regs.try_emplace(e.thread.value, reader.layout().arch()).first->second;
    if (e.flags & backstep::core::kEventClearsRegisters) file.Clear();
    for (const auto& w : e.registers) file.Apply(w);
    for (const auto& w : e.writes) {
      if (!w.data.empty() && (w.data.front() ^ w.data.back()) == 0x5a) file.Clear();  // touch
    }
  }
  for (const auto& pos : {middle, first}) {
    if (!reader.Seek(pos).ok()) continue;
    for (int i = 0; i < 8; ++i) {
      auto more = reader.Next(&e);
      if (!more.ok() || !*more) break;
    }
  }
  (void)reader.ResumePoints();
  return 0;
}

}  // namespace backstep::core::testing
