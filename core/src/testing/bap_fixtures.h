// BAP frames fixtures for tests and fuzz seeds: frame builders over the
// protobuf messages, a container assembled by hand (its own u64 layout
// code, not BapWriter's, so that a writer/reader pair sharing a
// misunderstanding of docs/formats/bap.md §4.1 cannot pass), and a small two-thread
// trace that holds every frame kind in both producer styles.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/bap/bap_frames.pb.h"

namespace backstep::core::testing {

namespace bp = backstep::core::bap_proto;

// Operand of a std_frame list. Registers: bit_length 0 (legacy QEMU) or
// 8 x size (TCG plugin), value little-endian.
bp::operand_info BapReg(const std::string& name, std::uint64_t value, int bytes = 8,
                        bool legacy = true);
bp::operand_info BapMem(std::uint64_t address, const std::string& value, bool written = false);
// A std_frame with its pre and post lists.
bp::frame BapStd(std::uint64_t thread, std::uint64_t address, const std::string& rawbytes,
                 const std::vector<bp::operand_info>& pre,
                 const std::vector<bp::operand_info>& post = {});
// A meta frame with every required field.
bp::meta_frame BapMeta(const std::string& tracer = "qemu", const std::string& version = "2.0.0");

struct BapFileSpec {
  std::uint64_t magic = 0x677c28828aaf6025ull;
  std::uint64_t version = 3;
  std::uint64_t arch = 9, machine = 64;
  std::uint64_t frames_per_toc_entry = 4;
  bool finished = true;        // false: n = 0, T = 0, no TOC (the tracer died)
  bool declare_frames = true;  // n as written (false: 0 even when finished)
};
// The container around `frames` (each serialized and length-prefixed); the
// TOC entries are the offsets of the length fields of frames m, 2m, ...
std::vector<std::uint8_t> HandBapFile(const std::vector<bp::frame>& frames,
                                      const BapFileSpec& spec = {},
                                      const bp::meta_frame& meta = BapMeta());

// The frames of SmallBapTrace (x86-64, threads 0 and 1, every kind).
std::vector<bp::frame> SmallBapFrames();
std::vector<std::uint8_t> SmallBapTrace(const BapFileSpec& spec = {});

}  // namespace backstep::core::testing
