#include "recorder/usercorn_sink.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>

#include "backstep/core/usercorn_recording.h"
#include "backstep/core/usercorn_registers.h"

namespace backstep::record {
namespace {

constexpr std::uint16_t kUnicornYmm0 = 154, kUnicornZmm0 = 186;

// What Convert does with a register, by its id (a table: the registers
// of every instruction go through it).
struct Form {
  std::uint16_t size = 0;
  std::uint16_t unicorn = core::kNoUnicornRegister;  // UnicornOf
  std::uint16_t pair = core::kNoUnicornRegister;     // SplitU64Of
  std::uint64_t pair_mask = 0;                       // its bits in the pair's u64
  unsigned pair_shift = 0;
  std::int8_t vector = -1;  // part of vector register `index`: 0 xmm, 1 ymmh, 2 zmmh
  std::uint8_t index = 0;
  bool tracked = false;
};

const std::vector<Form>& Forms() {
  static const std::vector<Form> forms = [] {
    const core::UsercornArch& arch = core::UsercornX86_64();
    const core::ArchDescription& x86 = core::X86_64();
    std::vector<Form> table(x86.register_count());
    for (core::RegisterId id = 0; id < table.size(); ++id) {
      Form& f = table[id];
      f.size = x86.info(id).size;
      f.unicorn = arch.UnicornOf(id);
      f.tracked = arch.IsTracked(id);
      f.pair = arch.SplitU64Of(id);
      if (f.pair != core::kNoUnicornRegister) {
        f.pair_shift = f.unicorn == f.pair ? 0 : 8 * x86.info(arch.Find(f.pair)).size;
        f.pair_mask = ((std::uint64_t(1) << (8 * f.size)) - 1) << f.pair_shift;
      }
    }
    for (int i = 0; i < 32; ++i) {
      const char* parts[] = {"xmm", "ymm", "zmm"};
      const char* suffix[] = {"", "h", "h"};
      for (int kind = 0; kind < 3; ++kind) {
        const auto id = *x86.Find(std::string(parts[kind]) + std::to_string(i) + suffix[kind]);
        table[id].vector = static_cast<std::int8_t>(kind);
        table[id].index = static_cast<std::uint8_t>(i);
      }
    }
    return table;
  }();
  return forms;
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
  const std::vector<Form>& forms = Forms();
  regs_.clear();
  special_.clear();
  special_bytes_.clear();
  special_sizes_.clear();
  std::uint32_t ymm_dirty = 0, zmm_dirty = 0;  // bit N: vector register N
  std::uint16_t split_dirty[8];                // FIP and FDP on x86-64
  std::size_t splits = 0;
  auto add_special = [&](std::uint16_t unicorn, const std::uint8_t* bytes, std::size_t size) {
    special_bytes_.insert(special_bytes_.end(), bytes, bytes + size);
    special_sizes_.emplace_back(unicorn, size);
  };
  for (const core::RegisterWrite& r : registers) {
    if (r.reg >= forms.size()) continue;
    const Form& f = forms[r.reg];
    if (f.vector >= 0) {
      std::uint8_t* z = halves_.zmm[f.index].data();
      if (f.vector == 0) {
        std::memcpy(z, r.value, 16);
      } else if (f.vector == 1) {
        std::memcpy(z + 16, r.value, 16);
        ymm_dirty |= 1u << f.index;
      } else {
        std::memcpy(z + 32, r.value, 32);
        zmm_dirty |= 1u << f.index;
      }
    }
    if (f.pair != core::kNoUnicornRegister) {
      // Half of a u64 REG (FIP = fioff + fiseg): update that half, send both.
      std::uint64_t& value = halves_.split[f.pair];
      std::uint64_t half = 0;
      std::memcpy(&half, r.value, f.size);
      value = (value & ~f.pair_mask) | (half << f.pair_shift);
      if (std::find(split_dirty, split_dirty + splits, f.pair) == split_dirty + splits) {
        if (splits < std::size(split_dirty)) split_dirty[splits++] = f.pair;
      }
      continue;
    }
    if (f.unicorn == core::kNoUnicornRegister) continue;
    if (f.size <= 8) {
      std::uint64_t value = 0;
      std::memcpy(&value, r.value, f.size);
      if (keyframe && f.tracked && value == 0) continue;
      regs_.push_back({f.unicorn, value});
    } else {
      add_special(f.unicorn, r.value, f.size);
    }
  }
  for (std::size_t i = 0; i < splits; ++i)
    regs_.push_back({split_dirty[i], halves_.split[split_dirty[i]]});
  // A changed upper part goes out with the parts below it: ZMMn (64 bytes)
  // when zmmNh changed, else YMMn (32 bytes).
  for (std::uint32_t dirty = ymm_dirty | zmm_dirty; dirty; dirty &= dirty - 1) {
    const int i = __builtin_ctz(dirty);
    const auto& z = halves_.zmm[i];
    if (zmm_dirty & (1u << i)) {
      add_special(static_cast<std::uint16_t>(kUnicornZmm0 + i), z.data(), 64);
    } else {
      add_special(static_cast<std::uint16_t>(kUnicornYmm0 + i), z.data(), 32);
    }
  }
  // The spans, once the bytes no longer move.
  std::size_t at = 0;
  for (const auto& [unicorn, size] : special_sizes_) {
    special_.emplace_back(unicorn, std::span<const std::uint8_t>(special_bytes_.data() + at, size));
    at += size;
  }
}

core::Status UsercornSink::OnStart(const StartInfo& start) {
  Convert(start.registers, true);
  if (resume_) {
    // The state one sink would have here: the halves (Convert) and the pc.
    writer_->Resume(start.pc);
    return writer_->status();
  }
  std::vector<core::UsercornMapping> maps;
  for (const Mapping& m : start.mappings) maps.push_back(ToUsercorn(m));
  auto read = [&](const core::UsercornMapping& u, std::vector<std::uint8_t>* out) {
    for (const Mapping& m : start.mappings) {
      if (m.start == u.address) return start.contents(m, out);
    }
    return core::Status::Ok();
  };
  return writer_->Begin(0, regs_, maps, read, start.pc, special_);
}

void UsercornSink::OnInstruction(const InstructionRecord& insn) {
  Convert(insn.registers, false);
  core::UsercornInstruction u;
  u.pc = insn.pc;
  u.size = insn.size;
  u.writes = insn.writes;
  u.reads = insn.reads;
  u.registers = regs_;
  u.special = special_;
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
  for (const core::UsercornRegisterValue& r : regs_) writer_->Reg(r.unicorn, r.value);
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
  writer_->StartThread(regs_, special_, start.pc);
}

void UsercornSink::OnSignal(const SignalRecord& s) {
  Convert(s.registers, false);
  core::UsercornInstruction u;
  u.pc = s.handler;
  u.writes = s.writes;
  u.registers = regs_;
  u.special = special_;
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
  out.registers = regs_;
  out.special = special_;
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
