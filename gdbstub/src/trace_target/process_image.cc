#include "backstep/gdbstub/process_image.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>

#include "backstep/core/cursor.h"
#include "backstep/core/hex.h"

namespace backstep::gdbstub {
namespace {

// Bounds that reject a stack that is not an exec's initial stack.
constexpr std::uint64_t kMaxArgs = 1 << 16;     // argv or envp entries
constexpr std::uint64_t kMaxAuxvEntries = 128;  // Linux has ~40 types
constexpr std::size_t kMaxPathLength = 4096;

// Reads one fully known u64 at `address`, or nullopt.
std::optional<std::uint64_t> ReadKnownU64(const core::Cursor& cursor, core::Address address) {
  std::uint8_t bytes[8], known[8];
  if (!cursor.ReadMemory(address, bytes, known).ok()) return std::nullopt;
  if (std::find(std::begin(known), std::end(known), 0) != std::end(known)) return std::nullopt;
  std::uint64_t value;
  std::memcpy(&value, bytes, 8);
  return value;
}

// Skips a NULL-terminated pointer array at `address`; returns the address
// after the NULL, or nullopt when a word is unknown or the array is too long.
std::optional<core::Address> SkipPointerArray(const core::Cursor& cursor, core::Address address) {
  for (std::uint64_t i = 0; i <= kMaxArgs; ++i, address += 8) {
    auto word = ReadKnownU64(cursor, address);
    if (!word) return std::nullopt;
    if (*word == 0) return address + 8;
  }
  return std::nullopt;
}

// The NUL-terminated string at `address` (at most kMaxPathLength bytes, all
// known), or nullopt.
std::optional<std::string> ReadKnownString(const core::Cursor& cursor, core::Address address) {
  std::string text;
  std::uint8_t byte, known;
  for (std::size_t i = 0; i < kMaxPathLength; ++i) {
    if (!cursor.ReadMemory(address + i, {&byte, 1}, {&known, 1}).ok() || !known) break;
    if (byte == 0) return text;
    text.push_back(static_cast<char>(byte));
  }
  return std::nullopt;
}

std::optional<std::uint64_t> StackPointer(const core::Cursor& cursor) {
  const core::ArchDescription& arch = cursor.trace().arch();
  if (arch.sp() == core::kNoRegister || arch.info(arch.sp()).size != 8) return std::nullopt;
  auto registers = cursor.Registers(cursor.current_thread());
  if (!registers.ok()) return std::nullopt;
  std::uint8_t bytes[8];
  if (!(*registers)->Read(arch.sp(), bytes)) return std::nullopt;
  std::uint64_t sp;
  std::memcpy(&sp, bytes, 8);
  return sp;
}

std::string_view Basename(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The lowest initial mapping whose file has the basename of `path`.
std::optional<core::Address> LowestMappingOf(const core::Trace& trace, std::string_view path) {
  std::optional<core::Address> lowest;
  for (const core::MemoryRegion& region : trace.header().regions) {
    if (region.name.empty() || region.name[0] != '/') continue;
    if (Basename(region.name) != Basename(path)) continue;
    if (!lowest || region.start < *lowest) lowest = region.start;
  }
  return lowest;
}

void AppendPair(std::vector<std::uint8_t>& out, std::uint64_t type, std::uint64_t value) {
  for (std::uint64_t word : {type, value}) {
    std::uint8_t bytes[8];
    std::memcpy(bytes, &word, 8);
    out.insert(out.end(), bytes, bytes + 8);
  }
}

}  // namespace

core::Expected<std::vector<std::uint8_t>> RecordedAuxv(const core::Trace& trace,
                                                       core::Position at) {
  // Only a usercorn trace (backstep record) starts right after exec.
  if (trace.header().format != "usercorn") {
    return core::Status::NotFound(trace.header().format + " traces do not start at an exec");
  }
  // NOTE: the stack is parsed as 8-byte words and served as 16-byte auxv
  // entries; an i386 process's are 4 and 8 bytes, not read yet.
  if (trace.arch().pointer_size() != 8) {
    return core::Status::NotFound("the auxv of a " + std::string(trace.arch().name()) +
                                  " trace is not read yet (64-bit processes only)");
  }
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<core::Cursor> cursor, trace.NewCursor());
  BACKSTEP_RETURN_IF_ERROR(cursor->Seek(at));
  const std::string where = " at position " + std::to_string(at.value);
  auto sp = StackPointer(*cursor);
  if (!sp) return core::Status::NotFound("rsp is unknown" + where);
  auto argc = ReadKnownU64(*cursor, *sp);
  if (!argc || *argc > kMaxArgs) {
    return core::Status::NotFound("no plausible argc at rsp " + core::HexU64(*sp) + where);
  }
  core::Address argv = *sp + 8;
  auto argv_null = ReadKnownU64(*cursor, argv + *argc * 8);
  if (!argv_null || *argv_null != 0) {
    return core::Status::NotFound("argv[argc] at " + core::HexU64(argv + *argc * 8) +
                                  " is not NULL");
  }
  auto auxv_start = SkipPointerArray(*cursor, argv + *argc * 8 + 8);  // envp
  if (!auxv_start)
    return core::Status::NotFound("envp after " + core::HexU64(argv) + " is not terminated");
  std::vector<std::uint8_t> auxv;
  core::Address address = *auxv_start;
  for (std::uint64_t i = 0; i < kMaxAuxvEntries; ++i, address += 16) {
    auto type = ReadKnownU64(*cursor, address);
    auto value = ReadKnownU64(*cursor, address + 8);
    if (!type || !value) {
      return core::Status::NotFound("auxv entry at " + core::HexU64(address) +
                                    " is not fully known");
    }
    AppendPair(auxv, *type, *value);
    if (*type == kAtNull) {
      if (!AuxvValue(auxv, kAtEntry)) {
        return core::Status::NotFound("auxv at " + core::HexU64(*auxv_start) + " has no AT_ENTRY");
      }
      return auxv;
    }
  }
  return core::Status::NotFound("auxv at " + core::HexU64(*auxv_start) + " has no AT_NULL");
}

core::Expected<InitialStrings> RecordedInitialStrings(const core::Trace& trace) {
  if (trace.header().format != "usercorn" || trace.arch().pointer_size() != 8) {
    return core::Status::NotFound("only 64-bit usercorn traces start at an exec");
  }
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<core::Cursor> cursor, trace.NewCursor());
  BACKSTEP_RETURN_IF_ERROR(cursor->Seek(core::Position{0}));
  auto sp = StackPointer(*cursor);
  if (!sp) return core::Status::NotFound("rsp is unknown at position 0");
  auto argc = ReadKnownU64(*cursor, *sp);
  if (!argc || *argc > kMaxArgs) {
    return core::Status::NotFound("no plausible argc at rsp " + core::HexU64(*sp) +
                                  " at position 0");
  }
  InitialStrings out;
  core::Address at = *sp + 8;
  for (std::vector<std::string>* list : {&out.argv, &out.envp}) {
    for (std::uint64_t i = 0;; ++i, at += 8) {
      auto pointer = ReadKnownU64(*cursor, at);
      if (!pointer || i > kMaxArgs) {
        return core::Status::NotFound("argv/envp word at " + core::HexU64(at) + " is unknown");
      }
      if (*pointer == 0 || (list == &out.argv && i == *argc)) break;
      auto text = ReadKnownString(*cursor, *pointer);
      if (!text)
        return core::Status::NotFound("string at " + core::HexU64(*pointer) + " is unknown");
      list->push_back(std::move(*text));
    }
    at += 8;  // the NULL
  }
  return out;
}

std::optional<std::uint64_t> AuxvValue(const std::vector<std::uint8_t>& auxv, std::uint64_t type) {
  for (std::size_t at = 0; at + 16 <= auxv.size(); at += 16) {
    std::uint64_t entry_type, value;
    std::memcpy(&entry_type, auxv.data() + at, 8);
    std::memcpy(&value, auxv.data() + at + 8, 8);
    if (entry_type == type) return value;
    if (entry_type == kAtNull) break;
  }
  return std::nullopt;
}

std::string RecordedExecutablePath(const core::Trace& trace,
                                   const std::vector<std::uint8_t>& auxv) {
  if (auto execfn = AuxvValue(auxv, kAtExecfn)) {
    auto cursor = trace.NewCursor();
    if (cursor.ok() && (*cursor)->Seek(core::Position{0}).ok()) {
      auto path = ReadKnownString(**cursor, *execfn);
      if (path && !path->empty() && (*path)[0] == '/') return *path;
    }
  }
  if (auto entry = AuxvValue(auxv, kAtEntry)) {
    for (const core::MemoryRegion& region : trace.header().regions) {
      if (*entry >= region.start && *entry - region.start < region.size && !region.name.empty() &&
          region.name[0] == '/') {
        return region.name;
      }
    }
  }
  return "";
}

core::Expected<std::vector<std::uint8_t>> SynthesizeAuxv(const core::Trace& trace,
                                                         const std::string& elf_path) {
  if (trace.arch().pointer_size() != 8) {
    return core::Status::Unsupported(elf_path +
                                     ": --exe synthesizes the auxv of 64-bit "
                                     "programs only; the trace is " +
                                     std::string(trace.arch().name()));
  }
  std::ifstream file(elf_path, std::ios::binary);
  if (!file) return core::Status::IOError(elf_path + ": cannot open");
  Elf64_Ehdr header;
  if (!file.read(reinterpret_cast<char*>(&header), sizeof header)) {
    return core::Status::InvalidArgument(elf_path + ": shorter than an ELF64 header");
  }
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB) {
    return core::Status::InvalidArgument(elf_path + ": e_ident: not a little-endian ELF64 file");
  }
  if (header.e_machine != EM_X86_64) {
    return core::Status::InvalidArgument(elf_path + ": e_machine " +
                                         std::to_string(header.e_machine) + " is not x86-64");
  }
  if (header.e_type != ET_EXEC && header.e_type != ET_DYN) {
    return core::Status::InvalidArgument(elf_path + ": e_type " + std::to_string(header.e_type) +
                                         " is not an executable");
  }
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0) {
    return core::Status::InvalidArgument(elf_path + ": e_phentsize/e_phnum: no program headers");
  }
  std::vector<Elf64_Phdr> phdrs(header.e_phnum);
  file.seekg(static_cast<std::streamoff>(header.e_phoff));
  if (!file.read(reinterpret_cast<char*>(phdrs.data()),
                 static_cast<std::streamsize>(phdrs.size() * sizeof(Elf64_Phdr)))) {
    return core::Status::InvalidArgument(elf_path + ": program headers at offset " +
                                         core::HexU64(header.e_phoff) + " are truncated");
  }
  std::optional<std::uint64_t> lowest_load, phdr_vaddr;
  std::string interpreter;
  for (const Elf64_Phdr& phdr : phdrs) {
    if (phdr.p_type == PT_LOAD) {
      std::uint64_t page = phdr.p_vaddr & ~std::uint64_t{0xfff};
      if (!lowest_load || page < *lowest_load) lowest_load = page;
    } else if (phdr.p_type == PT_PHDR) {
      phdr_vaddr = phdr.p_vaddr;
    } else if (phdr.p_type == PT_INTERP && phdr.p_filesz > 1 && phdr.p_filesz < kMaxPathLength) {
      interpreter.resize(phdr.p_filesz);
      file.seekg(static_cast<std::streamoff>(phdr.p_offset));
      if (!file.read(interpreter.data(), static_cast<std::streamsize>(phdr.p_filesz))) {
        return core::Status::InvalidArgument(elf_path + ": PT_INTERP at offset " +
                                             core::HexU64(phdr.p_offset) + " is truncated");
      }
      interpreter.resize(interpreter.find('\0') == std::string::npos ? interpreter.size()
                                                                     : interpreter.find('\0'));
    }
  }
  if (!lowest_load) return core::Status::InvalidArgument(elf_path + ": no PT_LOAD segment");
  // Without PT_PHDR the headers are mapped with the first segment (file
  // offset 0), as the kernel assumes.
  if (!phdr_vaddr) phdr_vaddr = *lowest_load + header.e_phoff;
  std::uint64_t bias = 0;
  if (header.e_type == ET_DYN) {
    if (auto mapped = LowestMappingOf(trace, elf_path)) bias = *mapped - *lowest_load;
  }
  std::uint64_t base = 0;
  if (!interpreter.empty()) base = LowestMappingOf(trace, interpreter).value_or(0);
  std::vector<std::uint8_t> auxv;
  AppendPair(auxv, kAtPhdr, bias + *phdr_vaddr);
  AppendPair(auxv, kAtPhent, sizeof(Elf64_Phdr));
  AppendPair(auxv, kAtPhnum, header.e_phnum);
  AppendPair(auxv, kAtPagesz, 4096);
  AppendPair(auxv, kAtBase, base);
  AppendPair(auxv, kAtEntry, bias + header.e_entry);
  AppendPair(auxv, kAtNull, 0);
  return auxv;
}

}  // namespace backstep::gdbstub
