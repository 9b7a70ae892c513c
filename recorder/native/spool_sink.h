// SpoolSink: a RecordingSink that writes every call it gets into a file,
// and ReplaySpool(), which makes the same calls on another sink. An
// interval of a native recording is materialized in its own process into a
// spool file (materialize.h); the intervals' files, replayed in order into
// the one UsercornSink, write the trace a single pass writes, byte for byte
// (the sink sees the same calls).
//
// File format (host byte order: written and read by the same program on
// the same machine; buffered in memory and written out a megabyte at a
// time, and when the sink is finished or destroyed): one record per call, a
// tag byte then its fields, spans as a varint count and their items
// (registers: u16 id, u8 op, u8 length, the value's bytes before its
// trailing zeros; memory: u64 address, varint size, bytes; mappings:
// start, size, flags, file offset, varint name length, name). OnStart is
// written only when the sink keeps it (`keep_start`), with every mapping's
// contents read at once.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "backstep/core/expected.h"
#include "recorder/recording_sink.h"

namespace backstep::record {

class SpoolSink final : public RecordingSink {
 public:
  static core::Expected<std::unique_ptr<SpoolSink>> Create(const std::string& path,
                                                           bool keep_start);
  ~SpoolSink() override;

  core::Status OnStart(const StartInfo& start) override;
  void OnInstruction(const InstructionRecord& insn) override;
  void OnSyscall(const SyscallRecord& syscall) override;
  void OnSignal(const SignalRecord& signal) override;
  void OnKilled(int signal) override;
  core::Status Finish(bool exited) override;

 private:
  static constexpr std::size_t kFlushBytes = 1 << 20;
  SpoolSink(std::FILE* file, bool keep_start) : file_(file), keep_start_(keep_start) {
    buffer_.reserve(kFlushBytes + 4096);
  }
  // Writes the buffer out (a failure is kept for Finish).
  void Flush();
  std::FILE* file_;
  bool keep_start_;
  std::vector<std::uint8_t> buffer_;
  bool failed_ = false;
};

// What a replay sent.
struct SpoolCounts {
  std::uint64_t positions = 0;  // instructions and signal deliveries
  bool finished = false, exited = false;
  int killed = 0;  // OnKilled's signal, 0 if none
};

// Replays the spool at `path` into `sink`: OnStart only when `with_start`;
// OnKilled and Finish are not replayed (the caller ends the joined trace),
// only counted. A damaged file is an error naming its offset.
core::Expected<SpoolCounts> ReplaySpool(const std::string& path, RecordingSink& sink,
                                        bool with_start);

}  // namespace backstep::record
