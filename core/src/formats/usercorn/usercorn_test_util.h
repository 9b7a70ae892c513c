// Helpers shared by the usercorn tests: open bytes as a trace, and render
// events compactly (writes longer than 16 bytes by size and a checksum).
//
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "formats/usercorn/usercorn_reader.h"
#include "util/hex.h"

namespace backstep::core::usercorn_test {

inline Expected<std::unique_ptr<UsercornReader>> OpenBytes(std::vector<std::uint8_t> bytes,
                                                           std::string name = "t.ucir") {
  return UsercornReader::Open(MemorySource(std::move(bytes), std::move(name)));
}

inline std::string Summary(const Event& e) {
  std::string out(EventKindName(e.kind));
  out += " t" + std::to_string(e.thread.value);
  if (!e.description.empty()) out += " \"" + std::string(e.description) + "\"";
  for (const MemoryAccess& m : e.writes) {
    out += " W" + HexU64(m.address) + "=";
    if (m.data.size() <= 16) {
      out += HexBytes(m.data);
    } else {
      std::uint64_t sum = 0;
      for (std::uint8_t b : m.data) sum = sum * 31 + b;
      out += std::to_string(m.data.size()) + "B#" + HexU64(sum);
    }
  }
  for (const RegisterWrite& r : e.registers) {
    const RegisterInfo& info = X86_64().info(r.reg);
    out += " " + std::string(info.name) + (r.op == RegisterOp::kSet ? "=" : "+=");
    if (info.size <= 8) {
      std::uint64_t v = 0;
      for (int i = 0; i < info.size; ++i) v |= std::uint64_t{r.value[i]} << (8 * i);
      out += HexU64(v);
    } else {
      out += HexBytes(std::span<const std::uint8_t>(r.value, info.size));
    }
  }
  return out;
}

// Every event from the reader's position; the error, if any, is appended
// as "error: <status>".
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
    out.push_back(Summary(e));
  }
  return out;
}

}  // namespace backstep::core::usercorn_test
