// TfileWriter: writes a gdb trace file (TRACE0) from typed definitions and
// frames. The building block of test fixtures, `backstep convert --to
// tfile` (tfile_trace_writer.h) and, later, the exporter.
//
// What it writes, in gdb's order (formats.md §3.1):
//   "\x7fTRACE0\n"
//   R <hex size>                the layout of X86_64().GdbLayout(features)
//   tdesc <line> ...            that layout as one inline document (optional)
//   status 0;tstop::0;tframes:<n>;tcreated:<n>;tfree:0;tsize:<bytes>;
//          circular:0;disconn:0[;notes:<hex>][;username:<hex>]
//                               (counts patched by Finish(), fixed width)
//   tsv ... / tp ...            as given (tfile_definitions.h formatting)
//   blank line, frames, end marker (a u32 0, as gdb writes it)
// Frames: BeginFrame(tpnum), blocks in the order added, EndFrame(). R blocks
// come from a RegisterFile (st(i) from fpr via TOP; unknown registers as
// zeros: a tfile has no "unknown" marker inside R) or raw bytes; M blocks
// are split at 65535 bytes.
//
// Output goes through AtomicFile (temporary name, renamed by Finish()), or
// into a byte vector for tests. Misuse that the file could not express (a
// line gdb would refuse, tracepoint 0 or > 32767 owning a frame, a frame
// over 4 GiB) is InvalidArgument, reported by the call or by Finish(); after
// an error every call does nothing and Finish() returns it.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/register_file.h"
#include "formats/tfile/tfile_definitions.h"
#include "formats/tfile/tfile_layout.h"
#include "util/atomic_file.h"

namespace backstep::core {

struct TfileWriterOptions {
  std::uint32_t features = kDefaultX86_64Features;  // R-block layout
  bool write_tdesc = true;  // without it gdb assumes the executable's architecture
  std::string notes;        // status notes ("" none)
  std::string user;         // status username ("" none)
};

class TfileWriter {
 public:
  // Creates the temporary file beside `path`. IOError if impossible.
  static Expected<std::unique_ptr<TfileWriter>> Create(const std::string& path,
                                                       TfileWriterOptions options = {});
  // Appends the file's bytes to *out instead (tests, fuzz seeds).
  static std::unique_ptr<TfileWriter> CreateInMemory(std::vector<std::uint8_t>* out,
                                                     TfileWriterOptions options = {});

  const TfileRegisterLayout& layout() const { return layout_; }

  // Writes the definition lines. At most once, before the first frame;
  // BeginFrame() and Finish() write empty definitions when it was not called.
  Status WriteDefinitions(const std::vector<TfileTsv>& tsvs,
                          const std::vector<TfileTracepoint>& tracepoints);

  // Frame protocol. REQUIRES: no frame open for BeginFrame, one open for the
  // others (asserted).
  void BeginFrame(int tpnum);
  void AddRegisters(const RegisterFile& regs);                // an X86_64() file
  void AddRawRegisters(std::span<const std::uint8_t> block);  // layout().block_size() bytes
  void AddMemory(Address address, std::span<const std::uint8_t> bytes);
  void AddTsvValue(std::int32_t number, std::int64_t value);
  // gdbserver's static-tracepoint data (readers skip it); for tests.
  void AddStaticData(std::span<const std::uint8_t> bytes);
  Status EndFrame();

  // Writes the end marker, patches the status counts, renames into place.
  Status Finish();

  std::uint64_t frames_written() const { return frames_; }

 private:
  explicit TfileWriter(TfileWriterOptions options);
  void Write(std::span<const std::uint8_t> bytes);
  void WriteLine(std::string_view line);
  void PatchHex(std::uint64_t at, std::uint64_t value, int digits);
  void Fail(Status s);
  void Le(std::uint64_t v, int bytes);  // into the open frame

  TfileWriterOptions options_;
  TfileRegisterLayout layout_;
  std::optional<AtomicFile> file_;
  std::vector<std::uint8_t>* memory_ = nullptr;
  std::size_t memory_base_ = 0;  // where this file starts in *memory_
  std::string name_;             // for messages
  std::uint64_t size_ = 0;
  bool definitions_done_ = false;
  bool in_frame_ = false;
  bool finished_ = false;
  std::vector<std::uint8_t> frame_;  // the open frame, header included
  std::uint64_t frames_ = 0;
  std::uint64_t frame_bytes_ = 0;
  std::uint64_t frames_at_ = 0, created_at_ = 0, tsize_at_ = 0;  // patch offsets
  Status status_;
};

}  // namespace backstep::core
