// TfileWriter: writes a gdb trace file (TRACE0) from typed definitions and
// frames. The building block of test fixtures, `backstep convert --to
// tfile` (tfile_trace_writer.h) and `backstep export` (tfile_exporter.h).
//
// What it writes, in gdb's order (docs/formats/tfile.md §3.1):
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
  // The R size; 0: the layout's full size. A smaller size leaves the
  // registers whose end lies past it unavailable (gdb's rule, tfile_layout.h):
  // AddRegisters() writes only that many bytes.
  std::uint64_t block_size = 0;
  bool write_tdesc = true;  // without it gdb assumes the executable's architecture
  std::string notes;        // status notes ("" none)
  std::string user;         // status username ("" none)
  // Nonzero N: the definitions carry a decoy frame header (tracepoint 1,
  // size N) at file offset N, after a NUL in a `tdesc <!---->` comment line
  // (gdb and TfileReader ignore what follows a NUL), padded to that offset
  // with comment lines. For exports whose frames all have N data bytes:
  // gdb 13.1's first pc search after `target tfile` seeks to offset 0 + N
  // (docs/protocol.md §9) and must find a header there. N must not contain a 0x0a
  // byte, and must be past the first tdesc line; when the tdesc is shorter,
  // the comment lines follow it.
  std::uint32_t decoy_header_size = 0;
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
  // The R size written (TfileWriterOptions::block_size, or the layout's).
  std::uint64_t BlockSize() const;
  // TfileWriterOptions::decoy_header_size, once the frame size is known.
  // REQUIRES: before WriteDefinitions().
  void set_decoy_header_size(std::uint32_t size) { options_.decoy_header_size = size; }

  // Writes the definition lines. At most once, before the first frame;
  // BeginFrame() and Finish() write empty definitions when it was not called.
  Status WriteDefinitions(const std::vector<TfileTsv>& tsvs,
                          const std::vector<TfileTracepoint>& tracepoints);

  // Frame protocol. REQUIRES: no frame open for BeginFrame, one open for the
  // others (asserted).
  void BeginFrame(int tpnum);
  void AddRegisters(const RegisterFile& regs);                // an X86_64() file
  void AddRawRegisters(std::span<const std::uint8_t> block);  // BlockSize() bytes
  void AddMemory(Address address, std::span<const std::uint8_t> bytes);
  // An M block of length 0 (11 bytes that carry no memory: padding).
  void AddEmptyMemory(Address address);
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
  // Comment lines from size_ up to `offset`, then the decoy line (options_).
  void WriteDecoy(std::uint64_t offset);
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
