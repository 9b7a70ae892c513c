// GuardMappedFiles (backstep/core/mapping_guard.h): the SIGBUS handler that survives a
// mapped file shrinking under the process. MapFile() registers every
// mapping in a fixed table of atomics (the handler may not lock or
// allocate); the handler looks the faulting address up there, maps zero
// pages over the rest of that mapping (MAP_FIXED: the same addresses, so
// every pointer into it stays valid and the faulting read restarts on a
// readable page) and marks the mapping damaged.
#include "backstep/core/mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "util/mapping_registry.h"

namespace backstep::core {
namespace {

constexpr int kSlots = 256;  // mappings alive at once that can be guarded

struct Slot {
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<bool> damaged{false};
};
Slot g_slots[kSlots];
// Set with any slot's `damaged`: the stub asks after every packet, and
// scanning 256 atomics each time cost more than building the reply.
std::atomic<bool> g_any_damaged{false};
// Names of the slots' files, read only outside the handler.
std::mutex g_names_mutex;
std::string g_names[kSlots];

void OnSigbus(int signal, siginfo_t* info, void*) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& slot : g_slots) {
    const std::uintptr_t begin = slot.begin.load(), end = slot.end.load();
    if (begin == 0 || address < begin || address >= end) continue;
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t from = address & ~(page - 1);
    void* p = mmap(reinterpret_cast<void*>(from), end - from, PROT_READ,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) break;
    slot.damaged.store(true);
    g_any_damaged.store(true);
    return;  // the read restarts on the zero page
  }
  // Not ours: the default action (the process ends with SIGBUS).
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigaction(signal, &dfl, nullptr);
  raise(signal);
}

}  // namespace

int RegisterMapping(const void* data, std::size_t size, const std::string& name) {
  if (size == 0) return -1;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  for (int i = 0; i < kSlots; ++i) {
    std::uintptr_t expected = 0;
    if (g_slots[i].begin.compare_exchange_strong(expected, begin)) {
      {
        std::lock_guard<std::mutex> lock(g_names_mutex);
        g_names[i] = name;
      }
      g_slots[i].damaged.store(false);
      g_slots[i].end.store(begin + size);
      return i;
    }
  }
  return -1;  // table full: this mapping is not guarded
}

void UnregisterMapping(int slot) {
  if (slot < 0) return;
  g_slots[slot].end.store(0);
  g_slots[slot].begin.store(0);
}

void GuardMappedFiles() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action = {};
    action.sa_sigaction = OnSigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, nullptr);
  });
}

std::string MappedFilesDamaged() {
  if (!g_any_damaged.load(std::memory_order_acquire)) return "";
  for (int i = 0; i < kSlots; ++i) {
    if (g_slots[i].damaged.load()) {
      std::lock_guard<std::mutex> lock(g_names_mutex);
      return g_names[i].empty() ? "a mapped file" : g_names[i];
    }
  }
  return "";
}

}  // namespace backstep::core
