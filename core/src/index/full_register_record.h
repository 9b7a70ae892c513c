// The body of a full register record (index format version 10; the record
// header and its place among the keyframes are in index_format.h,
// RegisterRecordHeader): the register storage as 8-byte words with the zero
// ones left out, then the known words.
//
//   u64 bitmap[FullRecordBitmapWords(storage size)]  bit i: storage word i
//                                                    is not zero
//   u64 words[count]       the words whose bit is set, in order (count is
//                          the header's, the number of set bits)
//   u64 known[known words] RegisterFile::raw_known()
//
// Storage words are Align8(storage size) / 8; the last one is zero-padded.
// A thread's registers are mostly zero (unused vector registers, AVX-512
// state, masks): on x86-64 a recorded program's record is ~0.3-0.6 KB
// instead of the 3368 bytes of the raw storage.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace backstep::core {

std::uint64_t FullRecordStorageWords(std::uint64_t storage_size);
std::uint64_t FullRecordBitmapWords(std::uint64_t storage_size);

// Replaces `out` by the bitmap and the non-zero words of `storage`; returns
// the count of non-zero words (the header's count).
std::uint32_t EncodeFullRecordStorage(std::span<const std::uint8_t> storage,
                                      std::vector<std::uint64_t>& out);

// Fills `storage` from a body of `available` bytes whose header names
// `count` words. False (storage unspecified) if the body does not fit in
// `available`, its bitmap has bits past the storage or not `count` of them.
// On success `*known` points at the body's known words.
bool DecodeFullRecordStorage(const std::uint8_t* body, std::uint64_t available, std::uint32_t count,
                             std::uint64_t known_words, std::span<std::uint8_t> storage,
                             const std::uint8_t** known);

}  // namespace backstep::core
