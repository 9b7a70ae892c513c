// PacketLog: `--log FILE`, every packet in and out with a timestamp.
//
// One line per event, flushed at once (so a test can dump the log of a
// server it is about to kill):
//   2024-05-01 12:00:00.123456 #1 <- $qSupported:multiprocess+;...#xx
//   2024-05-01 12:00:00.123501 #1 -> $PacketSize=4000;...#xx
//   2024-05-01 12:00:00.200000 #1 -- connected from 127.0.0.1:40312
// `#N` is the client number, `<-` bytes received (as they arrived, so a line
// may hold several packets or part of one), `->` one ack or packet sent.
// Bytes outside printable ASCII are written as \xNN (an interrupt is \x03).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "backstep/core/expected.h"

namespace backstep::gdbstub {

class PacketLog {
 public:
  // Creates (truncates) `path`. IOError on failure.
  static core::Expected<std::unique_ptr<PacketLog>> Open(const std::string& path);
  ~PacketLog();

  void Received(int client, std::span<const std::uint8_t> bytes);
  void Sent(int client, std::string_view bytes);
  void Note(int client, std::string_view text);

 private:
  explicit PacketLog(std::FILE* file) : file_(file) {}
  void Line(int client, std::string_view arrow, std::string_view bytes);

  std::mutex mutex_;
  std::FILE* file_;
};

}  // namespace backstep::gdbstub
