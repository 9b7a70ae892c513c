// Fuzzes the BAP frames reader: arbitrary bytes opened as a .frames file
// from memory.
//
// Exercises what a consumer does with a reader: the header and initial
// registers, initial memory, every event (applied to a register file of the
// trace's architecture, so decoded writes must be well formed, and the
// accesses touched), and Tell/Seek back to the first event. Events are
// capped so a valid but long input cannot hang the run.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backstep/testing/reader_fuzz.h"
#include "formats/bap/bap_reader.h"
#include "testing/reader_probes.h"

namespace {

using backstep::core::BapReader;
using backstep::core::Event;
using backstep::core::RegisterFile;

constexpr int kMaxEvents = 20000;

}  // namespace

namespace backstep::core::testing {

int FuzzBapReader(const std::uint8_t* data, std::size_t size) {
  auto opened = BapReader::Open(
      backstep::core::MemorySource(std::vector<std::uint8_t>(data, data + size), "fuzz.frames"));
  if (!opened.ok()) return 0;
  BapReader& reader = **opened;
  backstep::core::testing::ProbeInitialMemory(reader);
  RegisterFile regs(*reader.header().arch);
  for (const auto& [tid, initial] : reader.InitialRegisters()) regs = initial;
  const auto first = reader.Tell();
  Event e;
  unsigned sum = 0;
  for (int i = 0; i < kMaxEvents; ++i) {
    auto more = reader.Next(&e);
    if (!more.ok() || !*more) break;
    for (const auto& w : e.registers) regs.Apply(w);
    for (const auto& a : e.writes) sum += a.data.empty() ? 0 : a.data.front() + a.data.back();
    for (const auto& a : e.reads) sum += a.data.empty() ? 0 : a.data.front() + a.data.back();
    sum += static_cast<unsigned>(e.description.size());
  }
  if (sum == 0x5a5a5a5a) regs.Clear();  // keep the loads
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
