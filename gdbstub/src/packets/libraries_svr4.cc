#include "packets/libraries_svr4.h"

#include <array>
#include <cstdint>

#include "backstep/gdbstub/process_image.h"
#include "backstep/gdbstub/target.h"
#include "packets/xfer.h"
#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {
namespace {

// <elf.h> values, ELF64 layouts.
constexpr std::uint32_t kPtDynamic = 2, kPtPhdr = 6;
constexpr std::uint64_t kDtNull = 0, kDtDebug = 21;
constexpr std::uint64_t kAtSysinfoEhdr = 33;  // the vDSO
constexpr std::size_t kPhdrSize = 56;         // Elf64_Phdr
constexpr std::uint64_t kMaxPhdrs = 256;
constexpr std::size_t kMaxDynamicEntries = 1024;
constexpr std::size_t kNameChunk = 256;

std::uint64_t LoadLe(const std::uint8_t* bytes, std::size_t size) {
  std::uint64_t value = 0;
  for (std::size_t i = size; i-- > 0;) value = (value << 8) | bytes[i];
  return value;
}

// The 8-byte little-endian word at `addr`, if all of it is known.
std::optional<std::uint64_t> ReadWord(Target& target, core::Address addr) {
  std::array<std::uint8_t, 8> bytes{};
  if (target.ReadMemory(addr, bytes) < bytes.size()) return std::nullopt;
  return LoadLe(bytes.data(), bytes.size());
}

// The NUL-terminated string at `addr`, as much of it as is known (at most
// kMaxName bytes), as gdbserver reads l_name.
std::string ReadName(Target& target, core::Address addr) {
  std::string name;
  std::array<std::uint8_t, kNameChunk> chunk{};
  while (name.size() < kMaxName) {
    std::size_t known = target.ReadMemory(addr + name.size(), chunk);
    for (std::size_t i = 0; i < known; ++i) {
      if (chunk[i] == 0 || name.size() == kMaxName) return name;
      name.push_back(static_cast<char>(chunk[i]));
    }
    if (known < chunk.size()) break;
  }
  return name;
}

// The executable's dynamic section in memory (PT_DYNAMIC relocated by
// AT_PHDR - PT_PHDR.p_vaddr), when the target has what it takes.
std::optional<core::Address> DynamicSection(Target& target) {
  const HostInfo* host = target.host_info();
  if (host == nullptr || host->pointer_size != 8 || !host->little_endian) return std::nullopt;
  auto auxv_span = target.auxv();
  std::vector<std::uint8_t> auxv(auxv_span.begin(), auxv_span.end());
  auto phdr = AuxvValue(auxv, kAtPhdr);
  auto phnum = AuxvValue(auxv, kAtPhnum);
  auto phent = AuxvValue(auxv, kAtPhent);
  if (!phdr || !phnum || *phnum == 0 || *phnum > kMaxPhdrs) return std::nullopt;
  if (phent && *phent != kPhdrSize) return std::nullopt;
  std::vector<std::uint8_t> headers(static_cast<std::size_t>(*phnum) * kPhdrSize);
  if (target.ReadMemory(*phdr, headers) < headers.size()) return std::nullopt;
  std::optional<std::uint64_t> phdr_vaddr, dynamic_vaddr;
  for (std::size_t i = 0; i < *phnum; ++i) {
    const std::uint8_t* header = headers.data() + i * kPhdrSize;
    const auto type = static_cast<std::uint32_t>(LoadLe(header, 4));
    const std::uint64_t vaddr = LoadLe(header + 16, 8);  // p_vaddr
    if (type == kPtPhdr && !phdr_vaddr) phdr_vaddr = vaddr;
    if (type == kPtDynamic && !dynamic_vaddr) dynamic_vaddr = vaddr;
  }
  // Without PT_PHDR the load bias is unknown; such programs (static ones)
  // have no DT_DEBUG anyway, as gdbserver notes.
  if (!phdr_vaddr || !dynamic_vaddr) return std::nullopt;
  return *phdr - *phdr_vaddr + *dynamic_vaddr;
}

// DT_DEBUG's value (the r_debug address; 0 before the dynamic linker set it).
std::uint64_t DebugBase(Target& target, core::Address dynamic) {
  for (std::size_t i = 0; i < kMaxDynamicEntries; ++i) {
    auto tag = ReadWord(target, dynamic + i * 16);
    if (!tag || *tag == kDtNull) break;
    if (*tag == kDtDebug) return ReadWord(target, dynamic + i * 16 + 8).value_or(0);
  }
  return 0;
}

std::string HexAddress(core::Address value) { return "0x" + HexNumber(value); }

// LLDB's names: the file of the mapping that holds `addr` at the position
// (the path /proc/PID/maps shows, "[vdso]"), else `name`.
std::string MappedName(Target& target, core::Address addr, std::string name) {
  MemoryMap* map = target.memory_map();
  if (map == nullptr) return name;
  MemoryRegion region = map->RegionAt(addr);
  return region.mapped && !region.name.empty() ? std::move(region.name) : name;
}

std::optional<Svr4LibraryList> ReadLinkMap(Target& target) {
  auto dynamic = DynamicSection(target);
  if (!dynamic) return std::nullopt;
  Svr4LibraryList list;
  std::uint64_t debug_base = DebugBase(target, *dynamic);
  if (debug_base == 0) return list;
  // r_debug: int r_version (padded), struct link_map* r_map.
  core::Address lm = ReadWord(target, debug_base + 8).value_or(0);
  core::Address prev = 0;
  for (std::size_t n = 0; lm != 0 && n < kMaxLibraries; ++n) {
    // link_map: l_addr, l_name, l_ld, l_next, l_prev.
    std::array<std::uint8_t, 40> entry{};
    if (target.ReadMemory(lm, entry) < entry.size()) break;
    const core::Address l_addr = LoadLe(entry.data(), 8), l_name = LoadLe(entry.data() + 8, 8),
                        l_ld = LoadLe(entry.data() + 16, 8), l_next = LoadLe(entry.data() + 24, 8),
                        l_prev = LoadLe(entry.data() + 32, 8);
    if (l_prev != prev) break;  // corrupt (or being updated): stop, as gdbserver does
    std::string name = l_name == 0 ? std::string() : ReadName(target, l_name);
    if (!name.empty()) {
      list.libraries.push_back(Svr4Library{std::move(name), lm, l_addr, l_ld});
    } else if (prev == 0) {
      list.main_lm = lm;
    }
    prev = lm;
    lm = l_next;
  }
  return list;
}

// gdb opens each library by its link-map name, as with gdbserver. LLDB
// (QThreadSuffixSupported) replaces its whole module list by the one it gets
// after `library:`: names it already knows (the dynamic linker and the vDSO
// under their mapping names, from qMemoryRegionInfo) keep their modules.
Svr4Names NamesFor(Session& session) {
  return session.state().negotiated.thread_suffix ? Svr4Names::kMappings : Svr4Names::kLinkMap;
}

}  // namespace

std::optional<Svr4LibraryList> ReadSvr4LibraryList(Target& target, Svr4Names names) {
  auto list = ReadLinkMap(target);
  if (!list || names == Svr4Names::kLinkMap) return list;
  for (Svr4Library& library : list->libraries) {
    library.name = MappedName(target, library.l_ld, std::move(library.name));
  }
  if (!list->libraries.empty()) return list;
  // LLDB ignores an empty list (it would keep the libraries of a later
  // position after a jump back): before the link map exists, what is loaded
  // is what the kernel mapped, the vDSO and the dynamic linker.
  auto auxv_span = target.auxv();
  std::vector<std::uint8_t> auxv(auxv_span.begin(), auxv_span.end());
  for (std::uint64_t type : {kAtSysinfoEhdr, kAtBase}) {
    auto base = AuxvValue(auxv, type);
    if (!base || *base == 0) continue;
    std::string name = MappedName(target, *base, "");
    if (!name.empty()) list->libraries.push_back(Svr4Library{std::move(name), 0, *base, 0});
  }
  return list;
}

std::string Svr4LibraryListXml(const Svr4LibraryList& list) {
  std::string out = "<library-list-svr4 version=\"1.0\"";
  if (list.main_lm) out += " main-lm=\"" + HexAddress(*list.main_lm) + '"';
  if (list.libraries.empty()) return out + "/>";
  out += '>';
  for (const Svr4Library& library : list.libraries) {
    out += "<library name=\"";
    AppendXmlEscaped(out, library.name);
    out += "\" lm=\"" + HexAddress(library.lm) + "\" l_addr=\"" + HexAddress(library.l_addr) +
           "\" l_ld=\"" + HexAddress(library.l_ld) + "\" lmid=\"0x0\"/>";
  }
  return out + "</library-list-svr4>";
}

bool CanListLibrariesSvr4(Target& target) { return DynamicSection(target).has_value(); }

bool NoteLibrariesForStop(Session& session) {
  if (!session.state().negotiated.thread_suffix) return false;  // not LLDB
  auto list = ReadSvr4LibraryList(session.target(), NamesFor(session));
  if (!list) return false;
  std::string document = Svr4LibraryListXml(*list);
  std::optional<std::string>& reported = session.state().reported_libraries;
  if (reported == document) return false;
  reported = std::move(document);
  return true;
}

Reply HandleXferLibrariesSvr4(Session& session, std::string_view args) {
  auto request = ParseXferRead(args);
  if (!request) return Reply::BadArguments("qXfer: malformed arguments");
  // A non-empty annex (start=, prev=) is gdb's incremental form, which it
  // uses only after augmented-libraries-svr4-read+ (never offered).
  if (!request->annex.empty()) return Reply::Fail("qXfer:libraries-svr4: no such annex");
  auto list = ReadSvr4LibraryList(session.target(), NamesFor(session));
  if (!list) return Reply::Fail("qXfer:libraries-svr4: the program's link map cannot be found");
  // Rebuilt per chunk (the list is stable while the target is stopped).
  std::string document = Svr4LibraryListXml(*list);
  if (request->offset == 0) session.state().reported_libraries = document;
  return Reply::Packet(
      XferChunk(document, request->offset, request->length, session.options().packet_size));
}

}  // namespace backstep::gdbstub
