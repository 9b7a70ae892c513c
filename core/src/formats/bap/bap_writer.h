// BapWriter: writes the BAP frames container (bap_format.h) frame by frame,
// to a file (through AtomicFile: the file appears only when Finish()
// succeeds) or to memory (fixtures, fuzz seeds).
//
// Begin() writes the header with n = 0 and T = 0 (what a reader sees if the
// writer dies) and, for versions 2 and 3, the meta frame. AppendFrame()
// writes one length-prefixed frame; before frames m, 2m, ... it records the
// offset of their length field (libtrace's TOC convention, m =
// kBapFramesPerTocEntry). Finish() writes the TOC (m, then the entries) and
// patches n and T.
//
// Errors (IOError) are sticky and returned by Finish(); a frame whose
// serialization fails is InvalidArgument (a required field left unset).
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "formats/bap/bap_frames.pb.h"
#include "util/atomic_file.h"

namespace backstep::core {

struct BapWriterOptions {
  std::uint64_t version = 3;  // 1 (no meta frame), 2 or 3
  std::uint64_t frames_per_toc_entry = 64;
  bool write_toc = true;  // false: T = 0 and n = 0, as a tracer that died
};

class BapWriter {
 public:
  static Expected<std::unique_ptr<BapWriter>> CreateFile(const std::string& path,
                                                         BapWriterOptions options = {});
  static std::unique_ptr<BapWriter> CreateMemory(BapWriterOptions options = {});

  // `meta` is ignored for version 1.
  Status Begin(std::uint64_t arch, std::uint64_t machine, const bap_proto::meta_frame& meta);
  Status AppendFrame(const bap_proto::frame& frame);
  Status Finish();

  std::uint64_t frames() const { return frames_; }
  // The file's bytes (memory writers, after Finish()).
  const std::vector<std::uint8_t>& bytes() const { return memory_; }

 private:
  explicit BapWriter(BapWriterOptions options) : options_(options) {}
  void Put(std::span<const std::uint8_t> bytes);
  void PutU64(std::uint64_t v);
  void PatchU64(std::uint64_t offset, std::uint64_t v);
  std::uint64_t size() const { return file_ ? file_->size() : memory_.size(); }

  BapWriterOptions options_;
  std::optional<AtomicFile> file_;
  std::vector<std::uint8_t> memory_;
  std::string path_ = "<memory>";
  std::uint64_t frames_ = 0;
  std::vector<std::uint64_t> toc_;
  std::string scratch_;
  Status status_;
};

}  // namespace backstep::core
