// Fuzzes the tfile reader: arbitrary bytes opened as a gdb trace file from
// memory.
//
// Exercises everything a consumer does with a reader: the header, the typed
// view (tracepoints, the frame table, each frame's blocks and registers),
// every event applied to a register file (decoded writes must be well
// formed: in range ids, valid sizes), and Tell/Seek back to a saved frame.
// Frames are capped so a valid but long input cannot hang the run.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backstep/testing/reader_fuzz.h"
#include "formats/tfile/tfile_reader.h"

namespace {

using backstep::core::Event;
using backstep::core::RegisterFile;
using backstep::core::TfileReader;

constexpr std::uint64_t kMaxFrames = 20000;
volatile std::size_t sink;  // keeps the reads above from being optimized away

}  // namespace

namespace backstep::core::testing {

int FuzzTfileReader(const std::uint8_t* data, std::size_t size) {
  auto opened = TfileReader::Open(
      backstep::core::MemorySource(std::vector<std::uint8_t>(data, data + size), "fuzz.tf"));
  if (!opened.ok()) return 0;
  TfileReader& reader = **opened;
  std::size_t text = 0;
  for (const auto& [key, value] : reader.header().properties) text += key.size() + value.size();
  for (std::uint64_t n = 0; n < reader.frame_count() && n < kMaxFrames; ++n) {
    (void)reader.frame_tracepoint(n);
    (void)reader.FrameTracepoint(n);
    auto frame = reader.ReadFrame(n);
    if (!frame.ok()) __builtin_trap();  // the scan at open validated every frame
    for (const auto& v : frame->tsv_values) text += reader.TsvName(v.number).size();
    if (!reader.FrameRegisters(n).ok()) __builtin_trap();
  }
  auto threads = reader.InitialRegisters();
  RegisterFile& regs = threads.at(0).second;
  auto middle = reader.Tell();
  Event e;
  for (std::uint64_t i = 0; i < kMaxFrames; ++i) {
    if (i == reader.frame_count() / 2) middle = reader.Tell();
    auto more = reader.Next(&e);
    if (!more.ok() || !*more) break;
    if (e.flags & backstep::core::kEventClearsRegisters) regs.Clear();
    for (const auto& w : e.registers) regs.Apply(w);
    for (const auto& w : e.writes) text += w.data.size() + (w.address & 1);
    text += e.description.size();
  }
  if (!reader.Seek(middle).ok()) __builtin_trap();  // Tell() always resumes
  for (int i = 0; i < 4; ++i) {
    auto more = reader.Next(&e);
    if (!more.ok() || !*more) break;
  }
  sink = text;
  return 0;
}

}  // namespace backstep::core::testing
