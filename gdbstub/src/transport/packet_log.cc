#include "transport/packet_log.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

namespace backstep::gdbstub {
namespace {

std::string Timestamp() {
  using Clock = std::chrono::system_clock;
  const Clock::time_point now = Clock::now();
  const std::time_t seconds = Clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char buf[48];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%06lld", static_cast<long long>(micros));
  return buf;
}

std::string Printable(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace

core::Expected<std::unique_ptr<PacketLog>> PacketLog::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return core::Status::IOError(path + ": cannot create the packet log: " + std::strerror(errno));
  }
  return std::unique_ptr<PacketLog>(new PacketLog(file));
}

PacketLog::~PacketLog() { std::fclose(file_); }

void PacketLog::Received(int client, std::span<const std::uint8_t> bytes) {
  Line(client, "<-", std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

void PacketLog::Sent(int client, std::string_view bytes) { Line(client, "->", bytes); }

void PacketLog::Note(int client, std::string_view text) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(file_, "%s #%d -- %.*s\n", Timestamp().c_str(), client,
               static_cast<int>(text.size()), text.data());
  std::fflush(file_);
}

void PacketLog::Line(int client, std::string_view arrow, std::string_view bytes) {
  std::string text = Printable(bytes);
  std::string stamp = Timestamp();
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(file_, "%s #%d %.*s %s\n", stamp.c_str(), client, static_cast<int>(arrow.size()),
               arrow.data(), text.c_str());
  std::fflush(file_);
}

}  // namespace backstep::gdbstub
