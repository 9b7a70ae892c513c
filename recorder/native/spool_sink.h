// SpoolSink: a RecordingSink that writes every call it gets into a file,
// and ReplaySpool(), which makes the same calls on another sink. An
// interval of a native recording is materialized in its own process into a
// spool file (materialize.h); the intervals' files, replayed in order into
// the one UsercornSink, write the trace a single pass writes, byte for byte
// (the sink sees the same calls).
//
// File format (host byte order: written and read by the same program on
// the same machine; buffered, flushed by Finish): one record per call, a
// tag byte then its fields, spans as a u64 count and their items
// (registers: u16 id, u8 op, 64 value bytes; memory: u64 address, u64
// size, bytes; mappings: start, size, flags, file offset, name). OnStart is
// written only when the sink keeps it (`keep_start`), with every mapping's
// contents read at once.
//
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

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
  SpoolSink(std::FILE* file, bool keep_start) : file_(file), keep_start_(keep_start) {}
  std::FILE* file_;
  bool keep_start_;
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
