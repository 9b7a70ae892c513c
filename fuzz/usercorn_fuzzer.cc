// Fuzzes the usercorn reader: arbitrary bytes opened as a UCIR trace from
// memory.
//
// Exercises what a consumer does with a reader: the header, initial
// registers and memory (at region edges and the top of the address space),
// every event (applied to a register file, so decoded writes must be well
// formed), Tell/Seek back to every tenth event position and the first one.
// Events are capped so a valid but long input cannot hang the run.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/usercorn/usercorn_reader.h"

namespace {

using backstep::core::Address;
using backstep::core::Event;
using backstep::core::ReaderPosition;
using backstep::core::RegisterFile;
using backstep::core::UsercornReader;

constexpr int kMaxEvents = 20000;

void ReadMemory(const UsercornReader& reader) {
  std::vector<std::uint8_t> out(64), known(64);
  reader.ReadInitialMemory(0, out, known);
  reader.ReadInitialMemory(~Address{0} - 31, out, known);
  for (const auto& region : reader.header().regions) {
    reader.ReadInitialMemory(region.start - 32, out, known);
    reader.ReadInitialMemory(region.start + region.size - 32, out, known);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto opened = UsercornReader::Open(
      backstep::core::MemorySource(std::vector<std::uint8_t>(data, data + size), "fuzz.ucir"));
  if (!opened.ok()) return 0;
  UsercornReader& reader = **opened;
  ReadMemory(reader);
  auto threads = reader.InitialRegisters();
  RegisterFile regs(backstep::core::X86_64());
  if (!threads.empty()) regs = threads[0].second;
  std::vector<ReaderPosition> positions;
  Event e;
  for (int i = 0; i < kMaxEvents; ++i) {
    if (i % 10 == 0) positions.push_back(reader.Tell());
    auto more = reader.Next(&e);
    if (!more.ok() || !*more) break;
    for (const auto& w : e.registers) regs.Apply(w);
    for (const auto& w : e.writes) {
      if (!w.data.empty() && (w.data.front() ^ w.data.back()) == 0x5a) regs.Clear();  // touch
    }
  }
  for (auto it = positions.rbegin(); it != positions.rend(); ++it) {
    if (!reader.Seek(*it).ok()) continue;
    for (int i = 0; i < 3; ++i) {
      auto more = reader.Next(&e);
      if (!more.ok() || !*more) break;
    }
  }
  return 0;
}
