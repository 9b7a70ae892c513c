// backstep's signal SYSCALLs in UCIR (usercorn_recording.h): written by
// AppendSignal/AppendKilled, read back as kInterrupt events and a final
// marker whose descriptions carry the event notes (event_notes.h).
#include <gtest/gtest.h>

#include "backstep/core/event_notes.h"
#include "backstep/core/usercorn_recording.h"
#include "formats/usercorn/usercorn_test_util.h"
#include "formats/usercorn/usercorn_writer.h"

namespace backstep::core {
namespace {

using usercorn_test::OpenBytes;

constexpr std::uint16_t kUnicornRdi = 39;

TEST(UsercornSignalsTest, DeliveriesAreInterruptsAndTheEndNamesTheSignal) {
  std::unique_ptr<UsercornWriter> w = UsercornWriter::CreateMemory();
  ASSERT_TRUE(w->Begin(0, {}, {}, nullptr, Address{0x1000}).ok());
  UsercornInstruction syscall_insn;
  syscall_insn.pc = 0x1000;
  syscall_insn.size = 2;
  w->AppendInstruction(syscall_insn);
  const std::uint64_t args[] = {1, 10};
  w->BeginSyscall(62, 0, args);  // kill(1, SIGUSR1): the next delivery's origin
  w->EndSyscall();
  // SIGUSR1 handled: the handler's argument and a jump to it.
  const UsercornRegisterValue rdi[] = {{kUnicornRdi, 10}};
  UsercornInstruction delivery;
  delivery.pc = 0x2000;
  delivery.registers = rdi;
  std::vector<std::uint8_t> siginfo(kUcirSiginfoSize);
  for (std::size_t i = 0; i < siginfo.size(); ++i) siginfo[i] = static_cast<std::uint8_t>(i * 7);
  w->AppendSignal(10, siginfo, delivery);
  UsercornInstruction handler;
  handler.pc = 0x2000;
  handler.size = 1;
  w->AppendInstruction(handler);
  // SIGSEGV, fatal: a delivery without effects, then the end.
  UsercornInstruction nothing;
  nothing.pc = 0x2001;
  w->AppendSignal(11, {}, nothing);
  w->AppendKilled(11);
  ASSERT_TRUE(w->Finish().ok());

  auto reader = OpenBytes(w->TakeBytes());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto read = usercorn_test::ReadEventsWithNotes(**reader);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const std::vector<Event>& events = read->events;
  const std::vector<EventNotes>& notes = read->notes;
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].kind, EventKind::kInstruction);
  EXPECT_EQ(notes[0].syscall, 62);
  EXPECT_EQ(notes[0].signal, 0);
  EXPECT_EQ(events[1].kind, EventKind::kInterrupt);
  EXPECT_EQ(notes[1].signal, 10);
  EXPECT_EQ(notes[1].syscall, -1);  // not a system call for the stub
  EXPECT_EQ(notes[1].siginfo, siginfo);
  EXPECT_EQ(events[2].kind, EventKind::kInstruction);
  EXPECT_EQ(events[3].kind, EventKind::kInterrupt);
  EXPECT_EQ(notes[3].signal, 11);
  EXPECT_TRUE(events[3].writes.empty());
  EXPECT_TRUE(notes[3].siginfo.empty());
  EXPECT_EQ(events[4].kind, EventKind::kMarker);
  EXPECT_EQ(notes[4].killed_by, 11);
  EXPECT_TRUE(notes[4].exits);
  EXPECT_EQ(notes[4].signal, 0);
}

TEST(UsercornSignalsTest, NotesOfDescriptions) {
  Event e;
  e.kind = EventKind::kInstruction;
  const std::uint64_t args[] = {3, 0};
  const std::string exit_group = SyscallNote(231, args, 0) + "; unmap 0x1000+0x1000";
  e.description = exit_group;
  EventNotes n = ReadEventNotes(e);
  EXPECT_EQ(n.syscall, 231);
  EXPECT_EQ(n.exit_status, 3);
  const std::string signal = SignalNote(10);
  e.description = signal;
  EXPECT_EQ(ReadEventNotes(e).signal, 0);  // only an interrupt delivers
  e.kind = EventKind::kInterrupt;
  EXPECT_EQ(ReadEventNotes(e).signal, 10);
  e.description = "syscall x(1)";
  EXPECT_EQ(ReadEventNotes(e).syscall, -1);
}

}  // namespace
}  // namespace backstep::core
