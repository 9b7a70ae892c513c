// Fuzzes the REVEN reader: arbitrary bytes opened as a trace.bin from memory.
//
// Exercises everything a consumer does with a reader: the header and
// initial registers, initial memory at region edges and at the top of the
// address space, every event (applied to a register file, so decoded writes
// must be well formed), and Tell/Seek back to the first event. Events are
// capped so a valid but long input cannot hang the run.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backstep/testing/reader_fuzz.h"
#include "formats/reven/reven_reader.h"
#include "testing/reader_probes.h"

namespace {

using backstep::core::Address;
using backstep::core::Event;
using backstep::core::RegisterFile;
using backstep::core::RevenReader;

constexpr int kMaxEvents = 20000;

}  // namespace

namespace backstep::core::testing {

int FuzzRevenReader(const std::uint8_t* data, std::size_t size) {
  auto opened = RevenReader::Open(
      backstep::core::MemorySource(std::vector<std::uint8_t>(data, data + size), "fuzz.bin"));
  if (!opened.ok()) return 0;
  RevenReader& reader = **opened;
  backstep::core::testing::ProbeInitialMemory(reader);
  auto threads = reader.InitialRegisters();
  RegisterFile& regs = threads.at(0).second;
  const auto first = reader.Tell();
  Event e;
  for (int i = 0; i < kMaxEvents; ++i) {
    auto more = reader.Next(&e);
    if (!more.ok() || !*more) break;
    for (const auto& w : e.registers) regs.Apply(w);
    for (const auto& w : e.writes) {
      if (!w.data.empty() && (w.data.front() ^ w.data.back()) == 0x5a) regs.Clear();  // touch
    }
  }
  if (reader.Seek(first).ok()) {
    for (int i = 0; i < 8; ++i) {
      auto more = reader.Next(&e);
      if (!more.ok() || !*more) break;
    }
  }
  (void)reader.ResumePoints();
  return 0;
}

}  // namespace backstep::core::testing
