// The registry of file mappings that GuardMappedFiles() (mapping_guard.h)
// protects: MapFile() registers each mapping and unregisters it before
// unmapping.
//
// Thread-safety: lock-free for the signal handler; Register/Unregister may
// be called from any thread.
#pragma once

#include <cstddef>
#include <string>

namespace backstep::core {

// Returns the slot of the mapping [data, data + size), or -1 when it is
// empty or the table is full (the mapping is then not guarded).
int RegisterMapping(const void* data, std::size_t size, const std::string& name);
// Forgets a slot returned by RegisterMapping (-1: nothing).
void UnregisterMapping(int slot);

}  // namespace backstep::core
