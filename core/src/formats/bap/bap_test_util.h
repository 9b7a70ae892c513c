// Helpers shared by the BAP tests: open bytes as a trace, and render events
// compactly ("instruction t1 R401000=90 rax=0x5 W601000=01").
//
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backstep/testing/fake_trace.h"
#include "formats/bap/bap_reader.h"
#include "util/hex.h"

namespace backstep::core::bap_test {

inline Expected<std::unique_ptr<BapReader>> OpenBytes(std::vector<std::uint8_t> bytes,
                                                      std::string name = "t.frames") {
  return BapReader::Open(MemorySource(std::move(bytes), std::move(name)));
}

// `fake` made into what BapTraceWriter converts (bap_trace_writer.h): every
// thread exists at position 0 (a thread starting later gets one with no
// register known) and starts with an instruction, whose pre-list carries
// its initial registers.
inline testing::FakeTrace BapConvertible(testing::FakeTrace fake) {
  std::set<ThreadId> at_zero, started;
  for (const auto& [tid, regs] : fake.initial_registers) at_zero.insert(tid);
  for (testing::FakeEvent& e : fake.events) {
    if (!started.insert(e.thread).second) continue;
    e.kind = EventKind::kInstruction;
    if (at_zero.insert(e.thread).second) {
      fake.initial_registers.emplace_back(e.thread, RegisterFile(X86_64()));
    }
  }
  return fake;
}

inline std::string Summary(const Event& e, const ArchDescription& arch = X86_64()) {
  std::string out(EventKindName(e.kind));
  out += " t" + std::to_string(e.thread.value);
  if (!e.description.empty()) out += " \"" + std::string(e.description) + "\"";
  for (const MemoryAccess& m : e.reads) out += " R" + HexU64(m.address) + "=" + HexBytes(m.data);
  for (const RegisterWrite& r : e.registers) {
    const RegisterInfo& info = arch.info(r.reg);
    out += " " + std::string(info.name) + "=";
    if (info.size <= 8) {
      std::uint64_t v = 0;
      for (int i = 0; i < info.size; ++i) v |= std::uint64_t{r.value[i]} << (8 * i);
      out += HexU64(v);
    } else {
      out += HexBytes(std::span<const std::uint8_t>(r.value, info.size));
    }
  }
  for (const MemoryAccess& m : e.writes) out += " W" + HexU64(m.address) + "=" + HexBytes(m.data);
  return out;
}

// Every event from the reader's position; an error ends the list as
// "error: <status>".
inline std::vector<std::string> ReadAll(TraceReader& reader, std::size_t max = 1000000) {
  std::vector<std::string> out;
  Event e;
  while (out.size() < max) {
    auto more = reader.Next(&e);
    if (!more.ok()) {
      out.push_back("error: " + more.status().ToString());
      break;
    }
    if (!*more) break;
    out.push_back(Summary(e, reader.header().arch ? *reader.header().arch : X86_64()));
  }
  return out;
}

}  // namespace backstep::core::bap_test
