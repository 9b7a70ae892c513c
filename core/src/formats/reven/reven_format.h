// Constants of REVEN's rvnbintrace v1 format (trace.bin and trace.cache).
//
// The byte layout, the register mapping and the quirks backstep handles are
// described in docs/formats/reven.md; the normative reference is
// docs/formats/reven.md §1. Everything here is little-endian.
//
// File = binresource metadata (kRevenMetadataSizeV1 or kRevenMetadataSizeV0 bytes),
// then sections, each `u64 size` + payload (+ padding up to `size`).
//   trace.bin:   Header | Machine | Initial memory | Initial registers | Events
//   trace.cache: Header | Cache points | Index
//
// Thread-safety: constants only.
#pragma once

#include <cstdint>

namespace backstep::core {

// --- binresource metadata (docs/formats/reven.md §1.1) ---
inline constexpr std::uint64_t kRevenMagic = 0x72766e62696e7273;        // "srnibnvr" on disk
inline constexpr std::uint64_t kRevenLegacyMagic = 0x7262696e72737263;  // metadata version 0
inline constexpr std::uint32_t kRevenMetadataVersion = 1;               // newest we read
inline constexpr std::uint32_t kRevenResourceTraceBin = 1;
inline constexpr std::uint32_t kRevenResourceTraceCache = 2;
// Fixed capacity of each string field (the u64 length is extra).
inline constexpr std::uint64_t kRevenFormatVersionMax = 512;
inline constexpr std::uint64_t kRevenToolNameMax = 512;
inline constexpr std::uint64_t kRevenToolVersionMax = 512;
inline constexpr std::uint64_t kRevenToolInfoMax = 2048;
// Offset of the first section: v1 has tool_version, v0 does not.
inline constexpr std::uint64_t kRevenMetadataSizeV1 = 3640;
inline constexpr std::uint64_t kRevenMetadataSizeV0 = 3640 - 4 - 8 - 512;
// The only major format version we read ("1.0.1" is current).
inline constexpr char kRevenFormatVersion[] = "1.0.1";

// --- machine description (docs/formats/reven.md §1.2) ---
inline constexpr std::uint32_t kRevenArchX64V1 = 0x31343678;    // 'x641'
inline constexpr std::uint32_t kRevenArchArm64V1 = 0x316d7261;  // 'arm1'
inline constexpr std::uint8_t kRevenMinPhySize = 1;
inline constexpr std::uint8_t kRevenMaxPhySize = 8;
// An operation id may not be 0xff (that byte escapes a 2-byte register id).
inline constexpr std::uint8_t kRevenInvalidOperationId = 0xff;

// Operator bytes: 0 SET, 1 ADD, 2 AND, 3 OR, the values of RegisterOp
// (register_file.h), which the reader uses directly.
inline constexpr std::uint8_t kRevenMaxOperator = 3;

// --- events (docs/formats/reven.md §1.3) ---
// First byte 0xff: not an instruction; the next byte is the event type.
inline constexpr std::uint8_t kRevenNotInstruction = 0xff;
inline constexpr std::uint8_t kRevenEventTypeOther = 0xff;
// A count-byte nibble of 0xf: 14 entries here, a continuation byte follows.
inline constexpr std::uint8_t kRevenContinuationNibble = 0xf;
inline constexpr std::uint8_t kRevenEntriesPerFullChunk = 14;
// Escapes: memory length 0xff => PHY_SIZE-byte length; register id 0xff =>
// u16 id.
inline constexpr std::uint8_t kRevenLengthEscape = 0xff;
inline constexpr std::uint8_t kRevenRegisterIdEscape = 0xff;

// --- cache (docs/formats/reven.md §1.4) ---
// Bytes of one index entry before its pages; bytes of one page entry.
inline constexpr std::uint64_t kRevenCacheEntryFixedSize = 8 + 8 + 8 + 4;
inline constexpr std::uint64_t kRevenCachePageEntrySize = 8 + 8;

}  // namespace backstep::core
