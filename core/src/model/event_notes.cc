#include "backstep/core/event_notes.h"

#include <charconv>
#include <string_view>

#include "backstep/core/hex.h"
#include "backstep/core/mappings.h"

namespace backstep::core {
namespace {

constexpr std::string_view kSignal = "signal ", kKilled = "killed by signal ",
                           kSyscall = "syscall ", kExit = "exit", kSiginfo = " siginfo ",
                           kExec = "exec ";
// x86-64 Linux system calls that end the thread or the process.
constexpr std::int64_t kSysExit = 60, kSysExitGroup = 231;

// The number at the start of `text` (base 10, or 16 after "0x"); *rest is
// what follows it.
bool Number(std::string_view text, std::uint64_t* value, std::string_view* rest) {
  int base = 10;
  if (text.starts_with("0x")) {
    text.remove_prefix(2);
    base = 16;
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value, base);
  if (error != std::errc() || end == text.data()) return false;
  *rest = text.substr(static_cast<std::size_t>(end - text.data()));
  return true;
}

// Bytes of an even-length run of hex digits; empty when malformed.
std::vector<std::uint8_t> ParseHex(std::string_view text) {
  std::vector<std::uint8_t> out;
  if (text.size() % 2 != 0) return out;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    std::uint8_t byte = 0;
    const auto [end, error] = std::from_chars(text.data() + i, text.data() + i + 2, byte, 16);
    if (error != std::errc() || end != text.data() + i + 2) return {};
    out.push_back(byte);
  }
  return out;
}

}  // namespace

bool HasEventNotes(const TraceHeader& header) { return header.format == "usercorn"; }

EventNotes ReadEventNotes(const Event& event) {
  return ReadEventNotes(event.kind, event.description);
}

IndexedNotes ClassifyNotes(EventKind kind, std::string_view description) {
  IndexedNotes out;
  if (description.empty()) return out;
  const EventNotes notes = ReadEventNotes(kind, description);
  const bool other = notes.signal != 0 || notes.killed_by != 0 || notes.exit_status != -1 ||
                     notes.exits || !notes.siginfo.empty() || notes.execs ||
                     !ParseMappingChanges(description).empty();
  if (!other && notes.syscall >= 0) {
    out.plain_syscall = static_cast<std::uint64_t>(notes.syscall);
  } else {
    out.noted = other || notes.syscall != -1;
  }
  return out;
}

bool DescribesNotes(EventKind kind, std::string_view description) {
  const IndexedNotes c = ClassifyNotes(kind, description);
  return c.noted || c.plain_syscall.has_value();
}

std::optional<std::uint64_t> PlainSyscallNumber(EventKind kind, std::string_view description) {
  return ClassifyNotes(kind, description).plain_syscall;
}

EventNotes ReadEventNotes(EventKind kind, std::string_view description) {
  EventNotes notes;
  std::string_view text = description;
  while (!text.empty()) {
    const std::size_t end = text.find("; ");
    const std::string_view part = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 2);
    std::uint64_t value = 0;
    std::string_view rest;
    if (part == kExit && kind == EventKind::kMarker) {
      notes.exits = true;
    } else if (part.starts_with(kKilled) && Number(part.substr(kKilled.size()), &value, &rest)) {
      notes.killed_by = static_cast<int>(value);
    } else if (part.starts_with(kSignal) && Number(part.substr(kSignal.size()), &value, &rest)) {
      if (kind != EventKind::kInterrupt) continue;
      notes.signal = static_cast<int>(value);
      if (rest.starts_with(kSiginfo)) notes.siginfo = ParseHex(rest.substr(kSiginfo.size()));
    } else if (part.starts_with(kExec)) {
      const std::vector<std::uint8_t> path = ParseHex(part.substr(kExec.size()));
      notes.execs = true;
      notes.exec_path.assign(path.begin(), path.end());
    } else if (part.starts_with(kSyscall) && Number(part.substr(kSyscall.size()), &value, &rest) &&
               rest.starts_with('(')) {
      notes.syscall = static_cast<std::int64_t>(value);
      std::uint64_t status = 0;
      if ((notes.syscall == kSysExit || notes.syscall == kSysExitGroup) &&
          Number(rest.substr(1), &status, &rest)) {
        notes.exit_status = static_cast<int>(status & 0xff);
      }
    }
  }
  return notes;
}

std::string SignalNote(int signal, std::span<const std::uint8_t> siginfo) {
  std::string text = std::string(kSignal) + std::to_string(signal);
  if (!siginfo.empty()) text += std::string(kSiginfo) + HexBytes(siginfo);
  return text;
}

std::string KilledNote(int signal) { return std::string(kKilled) + std::to_string(signal); }

std::string ExecNote(std::string_view path) {
  return std::string(kExec) + HexBytes(std::span<const std::uint8_t>(
                                  reinterpret_cast<const std::uint8_t*>(path.data()), path.size()));
}

std::string SyscallNote(std::uint64_t number, std::span<const std::uint64_t> args,
                        std::uint64_t result) {
  std::string text = std::string(kSyscall) + std::to_string(number) + "(";
  for (std::size_t i = 0; i < args.size(); ++i) text += (i ? ", " : "") + HexU64(args[i]);
  return text + ") = " + HexU64(result);
}

}  // namespace backstep::core
