// Event notes: facts that some readers state in an event's description, in
// a fixed grammar, for consumers that need them (the gdb stub's signal and
// system call stops). Parts of a description are joined with "; ":
//   "signal N"                  a kInterrupt event that delivers Linux signal N
//   "signal N siginfo HEX"      ... with the kernel's siginfo_t (256 hex digits)
//   "killed by signal N"        the marker of a process that signal N ended
//   "syscall N(a, b, ...) = r"  the event makes system call N (hex arguments)
//   "exit"                      a kMarker: the process ended here
//   "exec HEX"                  the event replaces the process's image
//                               (execve); HEX: the new executable's path
// usercorn UCIR's reader writes them (docs/formats/usercorn.md); the
// functions below are the one place that writes and reads the grammar.
//
// The index lists every event whose description carries notes or mapping
// changes (DescribesNotes; docs/formats/index-format.md, "Noted events"):
// Trace::noted_events() hands them out, and Trace::plain_syscalls() the
// plain system calls among them, so that their consumers (the gdb stub's
// stops, the mapping timeline) do not decode the trace.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backstep/core/event.h"
#include "backstep/core/trace_reader.h"
#include "backstep/core/types.h"

namespace backstep::core {

struct EventNotes {
  int signal = 0;                     // delivered by a kInterrupt event
  int killed_by = 0;                  // a kMarker: the signal that ended the process
  std::int64_t syscall = -1;          // the system call made, or -1
  int exit_status = -1;               // x86-64 exit/exit_group: the status (arg 0 & 0xff)
  bool exits = false;                 // a kMarker: the process ended (exit or signal)
  std::vector<std::uint8_t> siginfo;  // of the delivered signal, when recorded
  bool execs = false;                 // the event execs a new image...
  std::string exec_path;              // ... of this executable
};

// Whether the trace's reader writes notes (usercorn UCIR); the index lists
// the events that carry them (Trace::noted_events()).
bool HasEventNotes(const TraceHeader& header);
EventNotes ReadEventNotes(const Event& event);
// The same from an event's kind and description.
EventNotes ReadEventNotes(EventKind kind, std::string_view description);

// Whether an event of this kind and description carries a note (any field
// of ReadEventNotes' answer set) or a mapping change (ParseMappingChanges,
// backstep/core/mappings.h): the events the index lists.
bool DescribesNotes(EventKind kind, std::string_view description);
// The system call's number when the event's only note is one system call
// that returns (no signal, exit, exec or mapping change): a plain system
// call, which the index keeps in its compact stream
// (backstep/core/plain_syscalls.h) rather than as a noted event.
std::optional<std::uint64_t> PlainSyscallNumber(EventKind kind, std::string_view description);
// Both answers from one parse (the index builder's, per event): a plain
// system call's number, or `noted` for every other event DescribesNotes
// is true of; neither for an event without notes.
struct IndexedNotes {
  bool noted = false;
  std::optional<std::uint64_t> plain_syscall;
};
IndexedNotes ClassifyNotes(EventKind kind, std::string_view description);

// An event the index lists (DescribesNotes, not a plain system call), as
// Trace::noted_events() hands it out.
struct NotedEvent {
  std::uint64_t event = 0;  // its number: the state after it is position event + 1
  ThreadId thread;
  EventKind kind = EventKind::kInstruction;
  // Event::description; points into the index, valid while the Trace lives.
  std::string_view description;
};

std::string SignalNote(int signal, std::span<const std::uint8_t> siginfo = {});
std::string KilledNote(int signal);
std::string ExecNote(std::string_view path);
std::string SyscallNote(std::uint64_t number, std::span<const std::uint64_t> args,
                        std::uint64_t result);

}  // namespace backstep::core
