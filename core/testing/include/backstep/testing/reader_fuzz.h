// Fuzz bodies of the trace readers (fuzz/<fmt>_fuzzer.cc calls them), and
// the usercorn seed files (fuzz/fuzz_seeds.cc). They live in core's test
// support because they drive each reader's own API (frames, resume points,
// CRC repair), which is private to core.
//
// Each body opens the bytes as a trace of its format and exercises what a
// consumer does (header, initial state, every event up to a cap, seeks);
// it traps (__builtin_trap) on an inconsistency, returns 0 otherwise.
//
// Thread-safety: reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace backstep::core::testing {

int FuzzRevenReader(const std::uint8_t* data, std::size_t size);
int FuzzTfileReader(const std::uint8_t* data, std::size_t size);
int FuzzUsercornReader(const std::uint8_t* data, std::size_t size);
int FuzzX64dbgReader(const std::uint8_t* data, std::size_t size);
int FuzzBapReader(const std::uint8_t* data, std::size_t size);

// Small valid UCIR files (file name, bytes) from our writer: every op, both
// chunk types, straddling chunks, a generated program's trace.
std::vector<std::pair<std::string, std::vector<std::uint8_t>>> UsercornSeedFiles();
// The same for BAP frames: every frame kind, both producer styles, versions
// 1 and 3, an unfinished file, i386, and a generated 3-thread trace.
std::vector<std::pair<std::string, std::vector<std::uint8_t>>> BapSeedFiles();

}  // namespace backstep::core::testing
