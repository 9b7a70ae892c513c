// Fuzz body of the index reader (fuzz/index_fuzzer.cc) and its seeds
// (fuzz/fuzz_seeds.cc). An index is trusted once its identity and checksum
// match, and anyone can compute both: the body takes the fuzzer's bytes as
// an index of one of two fixed generated traces (the one whose size its
// header names, else the first; the second's data is read through copies, so
// its index holds short data inline, in the XOR, stride and repeat forms),
// writes that trace's identity into the header and recomputes the checksum,
// so that every input reaches TraceIndex's parser and queries, which must
// reject or answer, never read outside the file.
//
// Thread-safety: reentrant after the first call (the fixed traces are built
// once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace backstep::core::testing {

int FuzzIndex(const std::uint8_t* data, std::size_t size);

// Valid indexes of the fixed traces, the first trace's first.
std::vector<std::vector<std::uint8_t>> IndexSeedFiles();

// Sets an index's identity to its fixed trace's (header) and recomputes its
// footer checksum, keeping every other byte (also for tests that craft
// indexes by hand).
void SealIndex(std::vector<std::uint8_t>& bytes);

}  // namespace backstep::core::testing
