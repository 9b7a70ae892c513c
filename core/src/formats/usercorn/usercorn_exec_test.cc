// A UCIR trace that holds two images (usercorn_recording.h, kUcirExec):
// AppendExec writes the change of image into the execve instruction's
// event; the reader names it ("exec HEX", event_notes.h), and a cursor
// shows the new image's memory and registers after it, the old image's
// before it, in both directions.
#include <gtest/gtest.h>

#include <cstring>

#include "backstep/core/cursor.h"
#include "backstep/core/event_notes.h"
#include "backstep/core/trace.h"
#include "backstep/core/usercorn_recording.h"
#include "formats/usercorn/usercorn_test_util.h"
#include "formats/usercorn/usercorn_writer.h"

namespace backstep::core {
namespace {

using usercorn_test::OpenBytes;

constexpr std::uint16_t kUnicornRdi = 39, kUnicornRsp = 44;
constexpr Address kOldCode = 0x400000, kNewCode = 0x400000, kNewData = 0x600000;

// A two-image trace: old image (code at kOldCode, "OLD!" in it, rdi = 5),
// one instruction, the `syscall` that execs, then the new image (code at
// the same address holding other bytes, a data mapping whose first and last
// bytes are 0, rdi = 0, rsp set) and one instruction there.
std::vector<std::uint8_t> TwoImages(const std::string& path) {
  std::unique_ptr<UsercornWriter> w = UsercornWriter::CreateMemory();
  const UsercornRegisterValue old_regs[] = {{kUnicornRdi, 5}};
  UsercornMapping old_code;
  old_code.address = kOldCode;
  old_code.size = 0x1000;
  old_code.file = old_code.desc = "/old/prog";
  const UsercornMapping old_maps[] = {old_code};
  auto read_old = [](const UsercornMapping&, std::vector<std::uint8_t>* out) {
    out->assign(0x1000, 0x11);
    std::memcpy(out->data() + 0x10, "OLD!", 4);
    return Status::Ok();
  };
  EXPECT_TRUE(w->Begin(0, old_regs, old_maps, read_old, kOldCode).ok());
  UsercornInstruction nop;
  nop.pc = kOldCode;
  nop.size = 1;
  w->AppendInstruction(nop);
  UsercornInstruction syscall_insn;
  syscall_insn.pc = kOldCode + 1;
  syscall_insn.size = 2;
  w->AppendInstruction(syscall_insn);

  UsercornMapping new_code = old_code, new_data;
  new_code.file = new_code.desc = path;
  new_data.address = kNewData;
  new_data.size = 0x2000;
  new_data.desc = "[heap]";
  const UsercornMapping new_maps[] = {new_code, new_data};
  const std::pair<Address, std::uint64_t> unmaps[] = {{kOldCode, 0x1000}};
  const UsercornRegisterValue new_regs[] = {{kUnicornRdi, 0}, {kUnicornRsp, 0x7ff000}};
  UsercornRecordingWriter::Exec exec;
  exec.path = path;
  exec.unmaps = unmaps;
  exec.maps = new_maps;
  exec.read_mapping = [](const UsercornMapping& m, std::vector<std::uint8_t>* out) {
    out->assign(m.size, 0);
    if (m.address == kNewCode) std::memcpy(out->data() + 0x10, "NEW!", 4);
    if (m.address == kNewData) (*out)[1] = 0x42;  // 0 first and last
    return Status::Ok();
  };
  exec.registers = new_regs;
  exec.pc = kNewCode + 0x20;
  w->AppendExec(exec);
  UsercornInstruction first;
  first.pc = kNewCode + 0x20;
  first.size = 4;
  w->AppendInstruction(first);
  w->AppendExit();
  EXPECT_TRUE(w->Finish().ok());
  return w->TakeBytes();
}

TEST(UsercornExecTest, TheExecEventNamesTheNewExecutable) {
  const std::string path = "/usr/lib/a path; with \"separators\"/new-prog";
  auto reader = OpenBytes(TwoImages(path));
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  auto read = usercorn_test::ReadEventsWithNotes(**reader);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const std::vector<Event>& events = read->events;
  const std::vector<EventNotes>& notes = read->notes;
  ASSERT_EQ(events.size(), 4u);  // nop, syscall (exec), first instruction, exit
  EXPECT_FALSE(notes[0].execs);
  EXPECT_EQ(events[1].kind, EventKind::kInstruction);
  EXPECT_TRUE(notes[1].execs);
  EXPECT_EQ(notes[1].exec_path, path);
  EXPECT_EQ(notes[1].syscall, -1);
  EXPECT_FALSE(notes[2].execs);
  EXPECT_TRUE(notes[3].exits);
}

TEST(UsercornExecTest, CursorShowsEachImageAtItsPositions) {
  const std::shared_ptr<const ByteSource> source = MemorySource(TwoImages("/bin/new"), "exec.ucir");
  auto make = [source]() -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(auto r, UsercornReader::Open(source));
    return std::unique_ptr<TraceReader>(std::move(r));
  };
  auto trace = Trace::OpenWith(make, "", OpenOptions());
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  auto cursor = (*trace)->NewCursor();
  ASSERT_TRUE(cursor.ok());
  const ArchDescription& arch = (*trace)->arch();
  const RegisterId rdi = *arch.Find("rdi"), rsp = *arch.Find("rsp");
  struct Expect {
    std::uint64_t position;
    Address pc;
    const char* code;  // 4 bytes at kOldCode + 0x10
    std::uint64_t rdi;
  };
  // Forward, then backward across the exec (event 1: position 1 -> 2).
  for (const Expect& x : {Expect{0, kOldCode, "OLD!", 5}, Expect{1, kOldCode + 1, "OLD!", 5},
                          Expect{2, kNewCode + 0x20, "NEW!", 0}, Expect{1, kOldCode + 1, "OLD!", 5},
                          Expect{0, kOldCode, "OLD!", 5}, Expect{2, kNewCode + 0x20, "NEW!", 0}}) {
    ASSERT_TRUE((*cursor)->Seek(Position(x.position)).ok()) << x.position;
    EXPECT_EQ((*cursor)->Pc(ThreadId(1)), std::optional<Address>(x.pc)) << x.position;
    std::uint8_t bytes[4], known[4];
    ASSERT_TRUE((*cursor)->ReadMemory(kOldCode + 0x10, bytes, known).ok());
    EXPECT_EQ(std::string(reinterpret_cast<char*>(bytes), 4), x.code) << x.position;
    auto regs = (*cursor)->Registers(ThreadId(1));
    ASSERT_TRUE(regs.ok());
    ASSERT_TRUE((*regs)->known(rdi));
    EXPECT_EQ((*regs)->u64(rdi), x.rdi) << x.position;
    if (x.position == 2) {
      EXPECT_EQ((*regs)->u64(rsp), 0x7ff000u);
      // The new mapping's bytes are known, zeros included.
      std::uint8_t data[3], data_known[3];
      ASSERT_TRUE((*cursor)->ReadMemory(kNewData, data, data_known).ok());
      EXPECT_EQ(data[0], 0);
      EXPECT_EQ(data[1], 0x42);
      EXPECT_EQ(data_known[0] & data_known[1] & data_known[2], 1);
    }
  }
}

TEST(UsercornExecTest, APathTooLongForTheEventFailsTheWriter) {
  std::unique_ptr<UsercornWriter> w = UsercornWriter::CreateMemory();
  ASSERT_TRUE(w->Begin(0, {}, {}, nullptr, Address{0x1000}).ok());
  UsercornRecordingWriter::Exec exec;
  exec.path = "/" + std::string(kUcirMaxExecPath, 'x');
  w->AppendExec(exec);
  EXPECT_FALSE(w->status().ok());
  EXPECT_NE(w->status().ToString().find("path"), std::string::npos) << w->status().ToString();
}

}  // namespace
}  // namespace backstep::core
