#include "backstep/testing/i386_threads_trace.h"

#include <array>
#include <memory>

#include "formats/usercorn/usercorn_writer.h"

namespace backstep::core::testing {
namespace {

// Unicorn x86 enums (docs/formats/usercorn.md §2.4).
constexpr std::uint16_t kEax = 19, kEbp = 20, kEbx = 21, kEcx = 22, kEdi = 23, kEdx = 24, kEsi = 29,
                        kEsp = 30;

void Le32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// Writes events to `w`, counting them as the reader decodes them: an
// instruction ends with its STEP; a FRAME that switches threads starts with
// a JMP, which is an event of its own.
class Program {
 public:
  Program(UsercornWriter& w, I386ThreadsFacts& f) : w_(w), f_(f) {}

  void SwitchTo(std::uint64_t pid, Address pc) {
    w_.EndFrame();
    w_.BeginFrame(pid);
    w_.Jmp(pc, 0);
    ++f_.events;
  }
  // Thread 1: one loop iteration from `code`.
  void Iteration() {
    const Address counter = f_.counter;
    if (f_.iterations == 0) f_.first_read_event = f_.events;
    w_.MemRead(counter, 4);
    w_.Reg(kEax, counter_);
    Step(5);
    w_.Reg(kEax, counter_ + 1);
    Step(3);
    ++counter_;
    std::vector<std::uint8_t> bytes;
    Le32(bytes, counter_);
    w_.MemWrite(counter, bytes);
    Step(5);
    Step(2);
    w_.Jmp(f_.code, 0);  // the taken jump: absorbed by the jmp's event
    ++f_.iterations;
  }
  // Thread 2's instructions, one per call.
  void Thread2(int k) {
    switch (k) {
      case 0:
        w_.Reg(kEax, f_.thread2_eax);
        Step(5);
        break;
      case 1:
        w_.Reg(kEsp, f_.thread2_esp);
        Step(5);
        break;
      case 2: {
        std::vector<std::uint8_t> bytes;
        Le32(bytes, f_.flag_value);
        f_.flag_write_event = f_.events;
        w_.MemWrite(f_.flag, bytes);
        Step(10);
        break;
      }
      case 3:
        f_.thread2_read_event = f_.events;
        w_.MemRead(f_.counter, 4);
        w_.Reg(kEax, counter_);
        Step(5);
        break;
    }
  }

 private:
  void Step(std::uint8_t size) {
    w_.Step(size);
    ++f_.events;
  }
  UsercornWriter& w_;
  I386ThreadsFacts& f_;
  std::uint32_t counter_ = 5;
};

// The code mapping: thread 1's loop at +0, thread 2's code at +0x100.
std::vector<std::uint8_t> Code(const I386ThreadsFacts& f) {
  std::vector<std::uint8_t> code(0x120, 0x90);
  const auto c = static_cast<std::uint32_t>(f.counter);
  std::vector<std::uint8_t> loop = {0xa1};  // mov eax, [counter]
  Le32(loop, c);
  loop.insert(loop.end(), {0x83, 0xc0, 0x01, 0xa3});  // add eax, 1; mov [counter], eax
  Le32(loop, c);
  loop.insert(loop.end(), {0xeb, 0xf1});  // jmp code
  std::copy(loop.begin(), loop.end(), code.begin());
  std::vector<std::uint8_t> t2 = {0xb8};  // mov eax, imm32
  Le32(t2, f.thread2_eax);
  t2.push_back(0xbc);  // mov esp, imm32
  Le32(t2, f.thread2_esp);
  t2.insert(t2.end(), {0xc7, 0x05});  // mov dword [flag], imm32
  Le32(t2, static_cast<std::uint32_t>(f.flag));
  Le32(t2, f.flag_value);
  t2.push_back(0xa1);  // mov eax, [counter]
  Le32(t2, c);
  std::copy(t2.begin(), t2.end(), code.begin() + 0x100);
  return code;
}

}  // namespace

Expected<I386ThreadsFacts> WriteI386ThreadsTrace(const std::string& path,
                                                 std::vector<std::uint8_t>* bytes) {
  I386ThreadsFacts f;
  UsercornWriterOptions options;
  options.arch = "x86";
  std::unique_ptr<UsercornWriter> w;
  if (path.empty()) {
    w = UsercornWriter::CreateMemory(options);
  } else {
    BACKSTEP_ASSIGN_OR_RETURN(w, UsercornWriter::CreateFile(path, options));
  }
  // Tracked registers: the tracer sends the non-zero ones (eax is 0).
  const UsercornRegisterValue regs[] = {
      {kEbp, f.stack1 + 0xf00}, {kEbx, 0x1111}, {kEcx, 0x2222},           {kEdi, 0x5555},
      {kEdx, 0x3333},           {kEsi, 0x4444}, {kEsp, f.stack1 + 0xef0},
  };
  std::vector<UsercornMapping> maps(4);
  maps[0].address = f.code, maps[0].size = 0x1000, maps[0].desc = "code";
  maps[0].prot = kProtRead | kProtExec;
  maps[1].address = f.data, maps[1].size = 0x100, maps[1].desc = "data";
  maps[1].prot = kProtRead | kProtWrite;
  maps[2].address = f.stack1, maps[2].size = 0x1000, maps[2].desc = "stack1";
  maps[3].address = f.stack2, maps[3].size = 0x1000, maps[3].desc = "stack2";
  const std::vector<std::uint8_t> code = Code(f);
  auto read = [&](const UsercornMapping& m, std::vector<std::uint8_t>* data) {
    if (m.address == f.code) *data = code;
    if (m.address == f.data) Le32(*data, f.counter_initial);
    if (m.address == f.stack1 || m.address == f.stack2) {
      // A return address at the top, as a real stack has (usercorn's
      // keyframe warns about stacks whose data starts at the mapping).
      data->assign(0xffc, 0);
      Le32(*data, static_cast<std::uint32_t>(f.code + 0x200));
    }
    return Status::Ok();
  };
  BACKSTEP_RETURN_IF_ERROR(w->Begin(0, regs, maps, read, f.code));
  Program p(*w, f);
  p.Iteration();
  p.Iteration();
  p.SwitchTo(1, f.code + 0x100);
  p.Thread2(0);
  p.SwitchTo(0, f.code);
  p.Iteration();
  p.SwitchTo(1, f.code + 0x105);
  p.Thread2(1);
  p.Thread2(2);
  p.SwitchTo(0, f.code);
  p.Iteration();
  p.SwitchTo(1, f.code + 0x114);
  p.Thread2(3);
  p.SwitchTo(0, f.code);
  p.Iteration();
  p.Iteration();
  w->EndFrame();
  BACKSTEP_RETURN_IF_ERROR(w->Finish());
  if (bytes != nullptr) *bytes = w->TakeBytes();
  return f;
}

}  // namespace backstep::core::testing
