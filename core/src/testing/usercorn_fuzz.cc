// Fuzzes the usercorn reader: arbitrary bytes opened as a UCIR trace from
// memory.
//
// Exercises what a consumer does with a reader: the header, initial
// registers and memory (at region edges and the top of the address space),
// every event (applied to a register file, so decoded writes must be well
// formed), Tell/Seek back to every tenth event position and the first one.
// Events are capped so a valid but long input cannot hang the run.
//
// Each input runs twice: as it is (the CRC checks), and with every data
// chunk's CRC recomputed, so that mutations inside chunks reach the op
// decoder instead of stopping at a CRC mismatch.
#include <snappy.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backstep/testing/reader_fuzz.h"
#include "formats/usercorn/crc32c.h"
#include "formats/usercorn/usercorn_reader.h"
#include "testing/reader_probes.h"

namespace {

using backstep::core::Address;
using backstep::core::Event;
using backstep::core::ReaderPosition;
using backstep::core::RegisterFile;
using backstep::core::UsercornReader;

constexpr int kMaxEvents = 20000;

// Rewrites the CRC of every data chunk after the 74-byte header. Returns
// false if nothing changed.
bool FixCrcs(std::vector<std::uint8_t>& f) {
  bool changed = false;
  for (std::size_t at = 74; at + 8 <= f.size();) {
    const std::size_t len = f[at + 1] | f[at + 2] << 8 | f[at + 3] << 16;
    if (len > f.size() - at - 4) break;
    const std::uint8_t type = f[at];
    if ((type == 0 || type == 1) && len >= 4) {
      const char* body = reinterpret_cast<const char*>(&f[at + 8]);
      std::string data;
      bool ok = type == 1;
      if (ok) {
        data.assign(body, len - 4);
      } else {
        std::size_t n = 0;
        ok = snappy::GetUncompressedLength(body, len - 4, &n) && n <= 65536 &&
             snappy::Uncompress(body, len - 4, &data);
      }
      if (ok) {
        const std::uint32_t crc = backstep::core::MaskCrc32c(backstep::core::Crc32c(
            {reinterpret_cast<const std::uint8_t*>(data.data()), data.size()}));
        for (int i = 0; i < 4; ++i) {
          const auto b = static_cast<std::uint8_t>(crc >> (8 * i));
          changed |= f[at + 4 + i] != b;
          f[at + 4 + i] = b;
        }
      }
    }
    at += 4 + len;
  }
  return changed;
}

// What must be the same when an event is decoded again after Seek().
std::string Signature(const Event& e) {
  std::string s = std::to_string(static_cast<int>(e.kind)) + "/" + std::to_string(e.thread.value) +
                  "/" + std::string(e.description);
  for (const auto& r : e.registers) {
    s += "/r" + std::to_string(r.reg) + ":" + std::to_string(static_cast<int>(r.op));
    s.append(reinterpret_cast<const char*>(r.value), 8);
  }
  for (const auto& w : e.writes) {
    s += "/w" + std::to_string(w.address) + ":";
    s.append(reinterpret_cast<const char*>(w.data.data()), w.data.size());
  }
  return s;
}

void Exercise(std::vector<std::uint8_t> bytes) {
  auto opened = UsercornReader::Open(backstep::core::MemorySource(std::move(bytes), "fuzz.ucir"));
  if (!opened.ok()) return;
  UsercornReader& reader = **opened;
  backstep::core::testing::ProbeInitialMemory(reader);
  auto threads = reader.InitialRegisters();
  RegisterFile regs(*reader.header().arch);  // x86_64 or i386 ("x86")
  if (!threads.empty()) regs = threads[0].second;
  std::vector<ReaderPosition> positions;
  std::vector<std::string> signatures;
  Event e;
  for (int i = 0; i < kMaxEvents; ++i) {
    const ReaderPosition at = reader.Tell();
    auto more = reader.Next(&e);
    if (!more.ok() || !*more) break;
    if (i % 10 == 0) {
      positions.push_back(at);
      signatures.push_back(Signature(e));
    }
    for (const auto& w : e.registers) regs.Apply(w);
    for (const auto& w : e.writes) {
      if (!w.data.empty() && (w.data.front() ^ w.data.back()) == 0x5a) regs.Clear();  // touch
    }
  }
  // Resuming at a position decodes the same event again.
  for (std::size_t k = positions.size(); k-- > 0;) {
    if (!reader.Seek(positions[k]).ok()) __builtin_trap();
    auto more = reader.Next(&e);
    if (!more.ok() || !*more || Signature(e) != signatures[k]) __builtin_trap();
  }
}

}  // namespace

namespace backstep::core::testing {

int FuzzUsercornReader(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  Exercise(bytes);
  if (FixCrcs(bytes)) Exercise(std::move(bytes));
  return 0;
}

}  // namespace backstep::core::testing
