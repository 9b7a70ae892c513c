#include "packets/search.h"

#include <algorithm>

#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {

std::optional<SearchMemoryRequest> ParseSearchMemory(std::string_view args) {
  std::size_t semi1 = args.find(';');
  if (semi1 == std::string_view::npos) return std::nullopt;
  std::size_t semi2 = args.find(';', semi1 + 1);
  if (semi2 == std::string_view::npos) return std::nullopt;
  auto addr = ParseHexU64(args.substr(0, semi1));
  auto length = ParseHexU64(args.substr(semi1 + 1, semi2 - semi1 - 1));
  auto pattern = DecodeHexString(args.substr(semi2 + 1));
  if (!addr || !length || !pattern || pattern->empty()) return std::nullopt;
  return SearchMemoryRequest{*addr, *length, std::move(*pattern)};
}

Reply HandleSearchMemory(Session& session, std::string_view args) {
  auto request = ParseSearchMemory(args);
  if (!request) return Reply::BadArguments("qSearch:memory: malformed arguments");
  const std::string& pattern = request->pattern;
  // Each chunk overlaps the previous one by pattern.size() - 1 bytes, so a
  // match straddling two chunks is found; the chunk must be larger than that.
  std::size_t chunk = std::max(session.options().packet_size, 2 * pattern.size());
  auto buffer = session.Scratch(chunk);
  core::Address addr = request->addr;
  std::uint64_t to_end = addr == 0 ? ~std::uint64_t{0} : 0 - addr;  // never past 2^64
  std::uint64_t remaining = std::min(request->length, to_end);
  while (remaining >= pattern.size()) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(remaining, chunk));
    std::size_t got = session.target().ReadMemory(addr, buffer.first(want));
    got = std::min(got, want);
    const char* begin = reinterpret_cast<const char*>(buffer.data());
    std::string_view haystack(begin, got);
    if (std::size_t at = haystack.find(pattern); at != std::string_view::npos) {
      std::string out = "1,";
      AppendHexNumber(out, addr + at);
      return Reply::Packet(std::move(out));
    }
    if (got < want) return Reply::Fail("qSearch:memory: memory not readable, search halted");
    if (want == remaining) break;
    std::size_t advance = want - (pattern.size() - 1);
    addr += advance;
    remaining -= advance;
  }
  return Reply::Packet("0");
}

}  // namespace backstep::gdbstub
