// UsercornWriter's recording level (usercorn_writer.h): what usercorn's
// tracer emits, from instructions and syscalls.
#include <algorithm>

#include "formats/usercorn/usercorn_writer.h"

namespace backstep::core {

Status UsercornWriter::Begin(std::uint64_t pid, std::span<const UsercornRegisterValue> registers,
                             std::span<const UsercornMapping> mappings,
                             const MappingReader& read_mapping, std::optional<Address> pc,
                             std::span<const SpecialRegister> special) {
  const std::uint64_t count =
      registers.size() + special.size() + 2 * mappings.size() + (options_.declare_reads ? 1 : 0);
  if (count > 0xffffffffu) return Status::InvalidArgument("usercorn writer: keyframe too large");
  pid_ = pid;
  BeginKeyframe(pid, static_cast<std::uint32_t>(count));
  if (options_.declare_reads) MemRead(0, 0);
  for (const UsercornRegisterValue& r : registers) Reg(r.unicorn, r.value);
  for (const auto& [unicorn, value] : special) SpReg(unicorn, value);
  std::vector<std::uint8_t> data;
  for (const UsercornMapping& m : mappings) {
    data.clear();
    if (read_mapping) {
      Status s = read_mapping(m, &data);
      if (!s.ok()) {
        if (status_.ok()) status_ = s;
        return s;
      }
    }
    if (data.size() > m.size) data.resize(m.size);
    WriteMapping(m, data);
  }
  EndFrame();
  if (pc) {
    BeginFrame(pid_);
    Jmp(*pc, 0);
  }
  next_pc_ = pc;
  return status_;
}

void UsercornWriter::WriteMapping(const UsercornMapping& m, std::span<const std::uint8_t> data) {
  MemMap(m);
  // Go's bytes.Trim(data, "\x00"), then where the rest goes.
  const auto nonzero = [](std::uint8_t b) { return b != 0; };
  const auto first = std::find_if(data.begin(), data.end(), nonzero);
  if (first == data.end()) return MemWrite(m.address, {});
  const auto last = std::find_if(data.rbegin(), data.rend(), nonzero).base();
  const std::uint64_t lead = static_cast<std::uint64_t>(first - data.begin());
  MemWrite(options_.trim_quirk ? m.address : m.address + lead,
           std::span<const std::uint8_t>(&*first, static_cast<std::size_t>(last - first)));
}

void UsercornWriter::EnsureFrame() {
  if (open_.empty()) BeginFrame(pid_);
}

void UsercornWriter::AppendJump(Address pc) {
  // usercorn starts a FRAME at every JMP.
  if (!open_.empty() && open_.back().type == kOpFrame && open_.back().count > 0) EndFrame();
  EnsureFrame();
  Jmp(pc, 0);  // block size unknown
  next_pc_ = pc;
}

void UsercornWriter::AppendEffects(const UsercornInstruction& insn) {
  EnsureFrame();
  for (const MemoryAccess& r : insn.reads) {
    MemRead(r.address, static_cast<std::uint32_t>(std::min<std::size_t>(r.data.size(), ~0u)));
  }
  for (const MemoryAccess& w : insn.writes) MemWrite(w.address, w.data);
  for (const UsercornRegisterValue& r : insn.registers) Reg(r.unicorn, r.value);
  for (const auto& [unicorn, value] : insn.special) SpReg(unicorn, value);
}

void UsercornWriter::AppendInstruction(const UsercornInstruction& insn) {
  if (insn.pc_known && (!next_pc_ || *next_pc_ != insn.pc)) {
    AppendJump(insn.pc);
  } else if (!open_.empty() && open_.back().ops.size() > options_.max_frame_bytes) {
    EndFrame();
  }
  AppendEffects(insn);
  Step(insn.size);
  next_pc_.reset();
  if (insn.pc_known) next_pc_ = insn.pc + insn.size;
}

void UsercornWriter::AppendJumpEvent(const UsercornInstruction& effects) {
  EnsureFrame();
  if (effects.empty()) MemRead(effects.pc, 0);
  AppendEffects(effects);
  AppendJump(effects.pc);
}

void UsercornWriter::AppendSignal(int signal, std::span<const std::uint8_t> siginfo,
                                  const UsercornInstruction& effects) {
  EnsureFrame();
  // An op that no tail absorbs opens the event, so that the SYSCALL inside
  // it is not taken for the previous instruction's.
  MemRead(effects.pc, 0);
  AppendEffects(effects);
  std::vector<std::uint64_t> args = {static_cast<std::uint64_t>(signal)};
  if (siginfo.size() == kUcirSiginfoSize) {
    for (std::size_t i = 0; i < kUcirSiginfoSize; i += 8) {
      std::uint64_t word = 0;
      for (std::size_t b = 0; b < 8; ++b) word |= std::uint64_t{siginfo[i + b]} << (8 * b);
      args.push_back(word);
    }
  }
  BeginSyscall(kUcirSignalDelivered + static_cast<std::uint32_t>(signal), 0, args);
  EndSyscall();
  AppendJump(effects.pc);
}

void UsercornWriter::AppendKilled(int signal) {
  EnsureFrame();
  const std::uint64_t number = static_cast<std::uint64_t>(signal);
  BeginSyscall(kUcirKilledBySignal + static_cast<std::uint32_t>(signal), 0, {&number, 1});
  Exit();
  EndSyscall();
}

void UsercornWriter::AppendExec(const Exec& exec) {
  if (exec.path.size() > kUcirMaxExecPath) {
    return Fail("the executable's path (" + std::to_string(exec.path.size()) +
                " bytes) is longer than a UCIR exec event holds (" +
                std::to_string(kUcirMaxExecPath) + ")");
  }
  std::vector<std::uint64_t> args = {exec.syscall, exec.path.size()};
  for (std::size_t i = 0; i < exec.path.size(); i += 8) {
    std::uint64_t word = 0;
    for (std::size_t b = 0; b < 8 && i + b < exec.path.size(); ++b) {
      word |= std::uint64_t{static_cast<std::uint8_t>(exec.path[i + b])} << (8 * b);
    }
    args.push_back(word);
  }
  EnsureFrame();
  BeginSyscall(kUcirExec, 0, args);
  for (const auto& [address, size] : exec.unmaps) MemUnmap(address, size);
  std::vector<std::uint8_t> data;
  for (const UsercornMapping& m : exec.maps) {
    data.clear();
    if (exec.read_mapping) {
      if (Status s = exec.read_mapping(m, &data); !s.ok()) {
        if (status_.ok()) status_ = s;
        return;
      }
    }
    data.resize(m.size);
    MemMap(m);
    // Whole, zeros included: bytes of the old image at the same addresses
    // must not show through (a reader zero-fills only small mappings).
    MemWrite(m.address, data);
  }
  for (const UsercornRegisterValue& r : exec.registers) Reg(r.unicorn, r.value);
  for (const auto& [unicorn, value] : exec.special) SpReg(unicorn, value);
  EndSyscall();
  AppendJump(exec.pc);
}

void UsercornWriter::AppendSyscall(const UsercornSyscall& s) {
  EnsureFrame();
  BeginSyscall(s.num, s.ret, s.args);
  for (const auto& [address, size] : s.unmaps) MemUnmap(address, size);
  for (const UsercornMapping& m : s.maps) MemMap(m);
  for (const MemoryAccess& w : s.writes) MemWrite(w.address, w.data);
  for (const UsercornRegisterValue& r : s.registers) Reg(r.unicorn, r.value);
  EndSyscall();
}

void UsercornWriter::SwitchThread(std::uint64_t pid, std::optional<Address> next_pc) {
  if (pid == pid_) return;
  // The JMP goes into this thread's frame: the reader gives it to the
  // thread's last event, so the thread resumes there.
  if (next_pc && next_pc_ != next_pc) AppendJump(*next_pc);
  thread_next_pc_[pid_] = next_pc ? next_pc : next_pc_;
  if (!open_.empty()) EndFrame();
  pid_ = pid;
  const auto it = thread_next_pc_.find(pid);
  next_pc_ = it == thread_next_pc_.end() ? std::nullopt : it->second;
}

void UsercornWriter::StartThread(std::span<const UsercornRegisterValue> registers,
                                 std::span<const SpecialRegister> special, Address pc) {
  EnsureFrame();
  for (const UsercornRegisterValue& r : registers) Reg(r.unicorn, r.value);
  for (const auto& [unicorn, value] : special) SpReg(unicorn, value);
  Jmp(pc, 0);
  next_pc_ = pc;
}

void UsercornWriter::AppendExit() {
  EnsureFrame();
  Exit();
}

}  // namespace backstep::core

namespace backstep::core {

Expected<std::unique_ptr<UsercornRecordingWriter>> CreateUsercornRecording(const std::string& path,
                                                                           bool records_reads) {
  UsercornWriterOptions options;
  options.declare_reads = records_reads;
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<UsercornWriter> writer,
                            UsercornWriter::CreateFile(path, options));
  return std::unique_ptr<UsercornRecordingWriter>(std::move(writer));
}

Expected<std::unique_ptr<UsercornRecordingWriter>> CreateUsercornPart(const std::string& path,
                                                                      bool first,
                                                                      bool records_reads) {
  UsercornWriterOptions options;
  options.declare_reads = records_reads;
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<UsercornWriter> writer,
                            UsercornWriter::CreatePart(path, first, options));
  return std::unique_ptr<UsercornRecordingWriter>(std::move(writer));
}

}  // namespace backstep::core
