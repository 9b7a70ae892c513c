// Reading usercorn traces in tests outside core (the recorder's damage
// battery): open bytes with the usercorn reader itself (not the sniffing
// registry, so damaged magic bytes still reach the reader's own errors), and
// render events compactly. Writing small recordings: a keyframe of bare
// mappings and effect-free instructions, for tests that add their own ops.
// Reading them back: the trace opened with a cursor, and bytes with whether
// each is known.
//
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/event.h"
#include "backstep/core/expected.h"
#include "backstep/core/trace.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/usercorn_recording.h"

namespace backstep::core::testing {

// `bytes` opened as a UCIR trace named `name` (errors name it).
Expected<std::unique_ptr<TraceReader>> OpenUsercornBytes(std::vector<std::uint8_t> bytes,
                                                         std::string name);

// One line per event: kind, thread, description, writes (longer than 16
// bytes by size and a checksum), registers of x86-64.
std::string EventSummary(const Event& e);

// writer->Begin() for thread 1 with no registers and `initial` without
// contents, the first frame at `pc`.
Status BeginBareRecording(UsercornRecordingWriter& writer, std::span<const UsercornMapping> initial,
                          Address pc);
// A 2-byte instruction at `pc` with no effects.
UsercornInstruction BareInstruction(Address pc);

// A recording at `path` of thread 1, in order: an mmap of
// 0x600000+0x3000 with a page made ---; a write(); SIGSEGV delivered (a
// siginfo of 0x11 bytes); a munmap of that mapping and of 0x401000+0x1000;
// a 2 MiB mmap at 0x600000 (not zero-filled, over the memory unmapped
// before); the process killed by SIGKILL. Each system call is made by an
// instruction of its own.
Status WriteNotesRecording(const std::string& path);

// A recording at `path` of thread 1 making `calls` system calls, each by an
// instruction of its own after 0-3 instructions without: numbers 0, 1 and
// 39 in turn (read, write, getpid: plain system calls), every 100th call
// an mmap instead (a noted event), and SIGSEGV delivered after call
// calls / 2. The index keeps the plain ones in several blocks.
Status WriteSyscallStormRecording(const std::string& path, int calls);

// A written recording opened (its index in `cache_dir`) with a cursor at its
// start.
struct OpenedRecording {
  std::shared_ptr<Trace> trace;
  std::unique_ptr<Cursor> cursor;
};
Expected<OpenedRecording> OpenRecording(const std::string& path, const std::string& cache_dir);

// `n` bytes at `address` where `cursor` is, and per byte 1 when it is known.
// Both empty when the read fails, so that a comparison with what a test
// expects fails.
struct KnownBytes {
  std::vector<std::uint8_t> values, known;
};
KnownBytes ReadKnownBytes(Cursor& cursor, Address address, std::size_t n);

}  // namespace backstep::core::testing
