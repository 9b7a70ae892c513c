#include "recorder/vdso.h"

#include <elf.h>

#include <cstring>

#include "backstep/core/hex.h"

namespace backstep::record {
namespace {

// The entries of an auxiliary vector: (type, value) pairs of u64.
void IgnoreEntries(std::vector<std::uint8_t>* auxv, std::uint64_t type) {
  for (std::size_t i = 0; i + 16 <= auxv->size(); i += 16) {
    std::uint64_t t = 0;
    std::memcpy(&t, auxv->data() + i, 8);
    if (t != type) continue;
    const std::uint64_t ignore = AT_IGNORE;
    std::memcpy(auxv->data() + i, &ignore, 8);
  }
}

}  // namespace

core::Status HideVdso(Tracee& tracee, std::uint64_t rsp, std::vector<std::uint8_t>* auxv) {
  auto word = [&](std::uint64_t address, std::uint64_t* value) {
    return tracee.ReadMemory(address, {reinterpret_cast<std::uint8_t*>(value), 8}) == 8;
  };
  const auto unreadable = [](std::uint64_t at) {
    return core::Status::IOError("the program's initial stack cannot be read at " +
                                 core::HexU64(at) + " (auxiliary vector)");
  };
  std::uint64_t argc = 0, value = 0;
  if (!word(rsp, &argc)) return unreadable(rsp);
  // argv[argc] is NULL; envp follows up to its own NULL.
  std::uint64_t at = rsp + 8 * (argc + 2);
  for (;; at += 8) {
    if (!word(at, &value)) return unreadable(at);
    if (value == 0) break;
  }
  for (at += 8;; at += 16) {
    if (!word(at, &value)) return unreadable(at);
    if (value == AT_NULL) break;
    if (value != AT_SYSINFO_EHDR) continue;
    const std::uint64_t ignore = AT_IGNORE;
    if (core::Status s =
            tracee.WriteMemory(at, {reinterpret_cast<const std::uint8_t*>(&ignore), 8});
        !s.ok())
      return s;
  }
  IgnoreEntries(auxv, AT_SYSINFO_EHDR);
  return core::Status::Ok();
}

}  // namespace backstep::record
