// qXfer:libraries-svr4:read (docs/protocol.md §4): the shared libraries
// loaded at the current position, for gdb (`info sharedlibrary`) and LLDB
// (`image list`), at every position, also after a jump.
//
// Both debuggers take the list as gdbserver writes it from the dynamic
// linker's link map, and so does the stub, from the target's memory at the
// position: the executable's program headers (auxv AT_PHDR, AT_PHNUM), its
// PT_DYNAMIC section, DT_DEBUG there (the r_debug the dynamic linker fills
// in), r_debug.r_map, then each link_map {l_addr, l_name, l_ld, l_next,
// l_prev}. The document:
//   <library-list-svr4 version="1.0" main-lm="0x..."><library name="/lib/x.so"
//    lm="0x..." l_addr="0x..." l_ld="0x..." lmid="0x0"/>...</library-list-svr4>
// (gdb 13 requires lmid, the link-map namespace: always the base one here).
// The first entry with an empty name is the executable (main-lm, not a
// library); other unnamed entries are skipped, as gdbserver does. Before the
// dynamic linker has set DT_DEBUG (or r_map) the list is empty.
//
// Answerable (and advertised in qSupported) only for a 64-bit little-endian
// target with an auxv whose program headers are readable and hold PT_PHDR
// and PT_DYNAMIC: a dynamically linked program. The walk is bounded
// (kMaxLibraries entries, names of at most kMaxName bytes) and stops at an
// unknown word or an l_prev that does not point back (a corrupt list).
//
// LLDB re-reads the list when a stop reply carries `library:`; the session
// adds it to the stop replies of LLDB clients (QThreadSuffixSupported: gdb
// treats `library:` as a solib event and resumes) when the list differs from
// the one last served or reported. gdb re-reads it at `info sharedlibrary`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/types.h"
#include "session/reply.h"

namespace backstep::gdbstub {

class Session;
class Target;

struct Svr4Library {
  std::string name;
  core::Address lm = 0;      // the link_map entry
  core::Address l_addr = 0;  // load bias
  core::Address l_ld = 0;    // its dynamic section
};

struct Svr4LibraryList {
  std::optional<core::Address> main_lm;
  std::vector<Svr4Library> libraries;
};

inline constexpr std::size_t kMaxLibraries = 4096;
inline constexpr std::size_t kMaxName = 4096;

// Library names: kLinkMap, l_name as gdbserver sends it (gdb); kMappings,
// for LLDB: the name of the mapping that holds l_ld (what /proc/PID/maps and
// qMemoryRegionInfo show: the real path, "[vdso]") and, while the link map
// lists nothing, the dynamic linker mapped at AT_BASE. LLDB replaces its
// module list by the list it reads (and ignores an empty one): with other
// names it would drop the dynamic linker and vDSO modules it loaded at
// connection, and keep the libraries of a later position after a jump back.
enum class Svr4Names : unsigned char { kLinkMap, kMappings };

// The list at the target's position; nullopt when the target cannot answer
// (see above).
std::optional<Svr4LibraryList> ReadSvr4LibraryList(Target& target, Svr4Names names);

// The document for `list` (names XML-escaped).
std::string Svr4LibraryListXml(const Svr4LibraryList& list);

// Whether qXfer:libraries-svr4:read can be answered at the position.
bool CanListLibrariesSvr4(Target& target);

// For a stop reply: whether `library:` must be sent (an LLDB client, and a
// list other than the one it last got); remembers the list as reported.
bool NoteLibrariesForStop(Session& session);

Reply HandleXferLibrariesSvr4(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
