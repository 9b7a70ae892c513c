// Constants of BAP's `frames` trace container (docs/formats/bap.md §4).
//
// File (all u64 little-endian):
//   off 0  magic 0x677c28828aaf6025      off 8  version (1, 2 or 3)
//   off 16 frame_architecture (§4.3)     off 24 frame_machine
//   off 32 n, frames (0: unfinished)     off 40 T, TOC offset (0: none)
//   off 48 v>=2: u64 meta_size, meta_frame protobuf[meta_size]
//          then n x { u64 len (> 0) ; frame protobuf[len] }
//   T      u64 m (frames per TOC entry), then u64 file offsets to EOF
// The messages are in bap_frames.proto. What backstep makes of each frame
// kind, and why: docs/formats/bap.md.
//
// Thread-safety: constants only.
#pragma once

#include <cstdint>
#include <string_view>

namespace backstep::core {

inline constexpr std::uint64_t kBapMagic = 0x677c28828aaf6025ull;
inline constexpr std::uint64_t kBapHeaderSize = 48;
inline constexpr std::uint64_t kBapMinVersion = 1, kBapMaxVersion = 3;
// What our writer puts: version 3 (std_frame.mode exists; we never set it).
inline constexpr std::uint64_t kBapWriteVersion = 3;

// frame_architecture values backstep reads (§4.3) and machines of i386.
inline constexpr std::uint64_t kBapArchI386 = 9;
inline constexpr std::uint64_t kBapMachI386 = 1, kBapMachI8086 = 2, kBapMachI386Intel = 3;
inline constexpr std::uint64_t kBapMachX86_64 = 64, kBapMachX86_64Intel = 65;

// The name of a frame_architecture value ("arm", "aarch64", "82" when past
// the enum's end), for messages.
std::string_view BapArchName(std::uint64_t arch);

// Frames per TOC entry our writer uses (the value BAP's tracers use).
inline constexpr std::uint64_t kBapFramesPerTocEntry = 64;

// Limits backstep enforces (docs/formats/bap.md):
// frames the reader looks ahead for a thread's next instruction (its pc
// after the current one) and that Open() scans for each thread's first pc.
inline constexpr std::uint64_t kBapLookahead = 65536;
// ReaderPosition.aux = frame index; positions past this are Unsupported.
inline constexpr std::uint64_t kBapMaxFrames = std::uint64_t{1} << 62;
// BAP thread ids become ThreadId(thread_id + 1) (gdb's thread 0 means
// "any"), so the largest id is 2^64 - 2.
inline constexpr std::uint64_t kBapMaxThreadId = ~std::uint64_t{0} - 1;

}  // namespace backstep::core
