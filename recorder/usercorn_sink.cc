#include "recorder/usercorn_sink.h"

#include <algorithm>
#include <cstring>

#include "backstep/core/usercorn_recording.h"
#include "backstep/core/usercorn_registers.h"

namespace backstep::record {
namespace {

constexpr std::uint16_t kUnicornYmm0 = 154, kUnicornZmm0 = 186;

// The parts of vector register N: xmmN, ymmNh, zmmNh.
struct VectorIds {
  core::RegisterId xmm[32], ymmh[32], zmmh[32];
  VectorIds() {
    for (int i = 0; i < 32; ++i) {
      xmm[i] = *core::X86_64().Find("xmm" + std::to_string(i));
      ymmh[i] = *core::X86_64().Find("ymm" + std::to_string(i) + "h");
      zmmh[i] = *core::X86_64().Find("zmm" + std::to_string(i) + "h");
    }
  }
};
const VectorIds& Vectors() {
  static const VectorIds ids;
  return ids;
}

std::uint8_t Prot(const Mapping& m) {
  return (m.read ? core::kProtRead : 0) | (m.write ? core::kProtWrite : 0) |
         (m.exec ? core::kProtExec : 0);
}

core::UsercornMapping ToUsercorn(const Mapping& m) {
  core::UsercornMapping u;
  u.address = m.start;
  u.size = m.size;
  u.prot = Prot(m);
  u.desc = m.name;
  if (!m.name.empty() && m.name[0] == '/') {
    u.file = m.name;
    u.file_offset = m.file_offset;
    u.file_length = m.size;
  }
  return u;
}

}  // namespace

core::Expected<std::unique_ptr<UsercornSink>> UsercornSink::Create(const std::string& path,
                                                                   bool records_reads) {
  core::Expected<std::unique_ptr<core::UsercornRecordingWriter>> w =
      core::CreateUsercornRecording(path, records_reads);
  if (!w.ok()) return w.status();
  return std::unique_ptr<UsercornSink>(new UsercornSink(std::move(*w), false));
}

core::Expected<std::unique_ptr<UsercornSink>> UsercornSink::CreatePart(const std::string& path,
                                                                       bool first) {
  core::Expected<std::unique_ptr<core::UsercornRecordingWriter>> w =
      core::CreateUsercornPart(path, first);
  if (!w.ok()) return w.status();
  return std::unique_ptr<UsercornSink>(new UsercornSink(std::move(*w), !first));
}

UsercornSink::UsercornSink(std::unique_ptr<core::UsercornRecordingWriter> writer, bool resume)
    : writer_(std::move(writer)), resume_(resume) {}

void UsercornSink::Cut() { writer_->Cut(); }

core::Status UsercornSink::AppendPart(const std::string& path, std::uint64_t size) {
  joined_ = true;
  return writer_->AppendPart(path, size);
}

std::uint64_t UsercornSink::bytes_written() const { return writer_->bytes_written(); }

UsercornSink::~UsercornSink() = default;

void UsercornSink::Convert(std::span<const core::RegisterWrite> registers, bool keyframe) {
  const core::UsercornArch& arch = core::UsercornX86_64();
  const core::ArchDescription& x86 = core::X86_64();
  const VectorIds& v = Vectors();
  regs_.clear();
  special_.clear();
  bool ymm_dirty[32] = {}, zmm_dirty[32] = {};
  std::vector<std::uint16_t> split_dirty;
  for (const core::RegisterWrite& r : registers) {
    const std::uint16_t size = x86.info(r.reg).size;
    for (int i = 0; i < 32; ++i) {
      if (r.reg == v.xmm[i]) std::memcpy(halves_.zmm[i].data(), r.value, 16);
      if (r.reg == v.ymmh[i]) {
        std::memcpy(halves_.zmm[i].data() + 16, r.value, 16);
        ymm_dirty[i] = true;
      }
      if (r.reg == v.zmmh[i]) {
        std::memcpy(halves_.zmm[i].data() + 32, r.value, 32);
        zmm_dirty[i] = true;
      }
    }
    if (const std::uint16_t pair = arch.SplitU64Of(r.reg); pair != core::kNoUnicornRegister) {
      // Half of a u64 REG (FIP = fioff + fiseg): update that half, send both.
      std::uint64_t& value = halves_.split[pair];
      const unsigned shift = arch.UnicornOf(r.reg) == pair ? 0 : 8 * x86.info(arch.Find(pair)).size;
      const std::uint64_t mask = ((std::uint64_t(1) << (8 * size)) - 1) << shift;
      std::uint64_t half = 0;
      std::memcpy(&half, r.value, size);
      value = (value & ~mask) | (half << shift);
      if (std::find(split_dirty.begin(), split_dirty.end(), pair) == split_dirty.end()) {
        split_dirty.push_back(pair);
      }
      continue;
    }
    const std::uint16_t unicorn = arch.UnicornOf(r.reg);
    if (unicorn == core::kNoUnicornRegister) continue;
    if (size <= 8) {
      std::uint64_t value = 0;
      std::memcpy(&value, r.value, size);
      if (keyframe && arch.IsTracked(r.reg) && value == 0) continue;
      regs_.push_back({unicorn, value});
    } else {
      special_.emplace_back(unicorn, std::vector<std::uint8_t>(r.value, r.value + size));
    }
  }
  for (std::uint16_t pair : split_dirty) regs_.push_back({pair, halves_.split[pair]});
  // A changed upper part goes out with the parts below it: ZMMn (64 bytes)
  // when zmmNh changed, else YMMn (32 bytes).
  for (int i = 0; i < 32; ++i) {
    const auto& z = halves_.zmm[i];
    if (zmm_dirty[i]) {
      special_.emplace_back(static_cast<std::uint16_t>(kUnicornZmm0 + i),
                            std::vector<std::uint8_t>(z.begin(), z.end()));
    } else if (ymm_dirty[i]) {
      special_.emplace_back(static_cast<std::uint16_t>(kUnicornYmm0 + i),
                            std::vector<std::uint8_t>(z.begin(), z.begin() + 32));
    }
  }
}

core::Status UsercornSink::OnStart(const StartInfo& start) {
  Convert(start.registers, true);
  if (resume_) {
    // The state one sink would have here: the halves (Convert) and the pc.
    writer_->Resume(start.pc);
    return writer_->status();
  }
  std::vector<core::UsercornRegisterValue> regs;
  for (const Reg& r : regs_) regs.push_back({r.unicorn, r.value});
  std::vector<core::UsercornRecordingWriter::SpecialRegister> special;
  for (const auto& [unicorn, data] : special_) special.emplace_back(unicorn, data);
  std::vector<core::UsercornMapping> maps;
  for (const Mapping& m : start.mappings) maps.push_back(ToUsercorn(m));
  auto read = [&](const core::UsercornMapping& u, std::vector<std::uint8_t>* out) {
    for (const Mapping& m : start.mappings) {
      if (m.start == u.address) return start.contents(m, out);
    }
    return core::Status::Ok();
  };
  return writer_->Begin(0, regs, maps, read, start.pc, special);
}

void UsercornSink::OnInstruction(const InstructionRecord& insn) {
  Convert(insn.registers, false);
  std::vector<core::UsercornRegisterValue> regs;
  for (const Reg& r : regs_) regs.push_back({r.unicorn, r.value});
  std::vector<core::UsercornRecordingWriter::SpecialRegister> special;
  for (const auto& [unicorn, data] : special_) special.emplace_back(unicorn, data);
  core::UsercornInstruction u;
  u.pc = insn.pc;
  u.size = insn.size;
  u.writes = insn.writes;
  u.reads = insn.reads;
  u.registers = regs;
  u.special = special;
  writer_->AppendInstruction(u);
}

void UsercornSink::OnSyscall(const SyscallRecord& s) {
  // Op level rather than AppendSyscall(): MEM_PROT has no place in
  // UsercornSyscall. OnInstruction() left a FRAME open.
  Convert(s.registers, false);
  writer_->BeginSyscall(s.number, s.result, std::span<const std::uint64_t>(s.args, 6));
  for (const Mapping& m : s.unmapped) writer_->MemUnmap(m.start, m.size);
  for (const Mapping& m : s.mapped) writer_->MemMap(ToUsercorn(m));
  for (const Mapping& m : s.protected_) writer_->MemProt(m.start, m.size, Prot(m));
  for (const core::MemoryAccess& w : s.writes) writer_->MemWrite(w.address, w.data);
  for (const Reg& r : regs_) writer_->Reg(r.unicorn, r.value);
  for (const auto& [unicorn, data] : special_) writer_->SpReg(unicorn, data);
  writer_->EndSyscall();
}

void UsercornSink::OnThreadSwitch(std::uint32_t to, std::optional<core::Address> from_next_pc) {
  if (to == thread_) return;
  others_[thread_] = std::move(halves_);
  halves_ = std::move(others_[to]);
  others_.erase(to);
  thread_ = to;
  writer_->SwitchThread(to, from_next_pc);
}

void UsercornSink::OnThreadStart(const ThreadStartRecord& start) {
  OnThreadSwitch(start.thread, std::nullopt);
  halves_ = Halves();
  Convert(start.registers, false);
  std::vector<core::UsercornRegisterValue> regs;
  for (const Reg& r : regs_) regs.push_back({r.unicorn, r.value});
  std::vector<core::UsercornRecordingWriter::SpecialRegister> special;
  for (const auto& [unicorn, data] : special_) special.emplace_back(unicorn, data);
  writer_->StartThread(regs, special, start.pc);
}

void UsercornSink::OnSignal(const SignalRecord& s) {
  Convert(s.registers, false);
  std::vector<core::UsercornRegisterValue> regs;
  for (const Reg& r : regs_) regs.push_back({r.unicorn, r.value});
  std::vector<core::UsercornRecordingWriter::SpecialRegister> special;
  for (const auto& [unicorn, data] : special_) special.emplace_back(unicorn, data);
  core::UsercornInstruction u;
  u.pc = s.handler;
  u.writes = s.writes;
  u.registers = regs;
  u.special = special;
  writer_->AppendSignal(s.signal, s.siginfo, u);
}

core::Status UsercornSink::OnExec(const ExecRecord& exec) {
  if (exec.executable.size() > core::kUcirMaxExecPath) {
    return core::Status::Unsupported(
        "the program execs " + exec.executable.substr(0, 64) + "...: a path longer than " +
        std::to_string(core::kUcirMaxExecPath) + " bytes does not fit a UCIR exec event");
  }
  // The vector registers' halves start again from the new state.
  halves_ = Halves();
  Convert(exec.registers, false);
  std::vector<core::UsercornRegisterValue> regs;
  for (const Reg& r : regs_) regs.push_back({r.unicorn, r.value});
  std::vector<core::UsercornRecordingWriter::SpecialRegister> special;
  for (const auto& [unicorn, data] : special_) special.emplace_back(unicorn, data);
  std::vector<std::pair<core::Address, std::uint64_t>> unmaps;
  for (const Mapping& m : exec.unmapped) unmaps.emplace_back(m.start, m.size);
  std::vector<core::UsercornMapping> maps;
  for (const Mapping& m : exec.mappings) maps.push_back(ToUsercorn(m));
  core::UsercornRecordingWriter::Exec out;
  out.syscall = exec.syscall;
  out.path = exec.executable;
  out.unmaps = unmaps;
  out.maps = maps;
  out.read_mapping = [&](const core::UsercornMapping& u, std::vector<std::uint8_t>* data) {
    for (const Mapping& m : exec.mappings) {
      if (m.start == u.address) return exec.contents(m, data);
    }
    return core::Status::Ok();
  };
  out.registers = regs;
  out.special = special;
  out.pc = exec.pc;
  writer_->AppendExec(out);
  return writer_->status();
}

void UsercornSink::OnKilled(int signal) {
  if (finished_ || killed_ || joined_) return;
  killed_ = true;
  writer_->AppendKilled(signal);
}

core::Status UsercornSink::Finish(bool exited) {
  if (finished_) return writer_->status();
  finished_ = true;
  if (exited && !killed_ && !joined_) writer_->AppendExit();
  return writer_->Finish();
}

}  // namespace backstep::record
