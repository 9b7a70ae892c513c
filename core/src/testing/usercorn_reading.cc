#include "backstep/testing/usercorn_reading.h"

#include "backstep/core/arch.h"
#include "backstep/core/hex.h"
#include "formats/usercorn/usercorn_reader.h"

namespace backstep::core::testing {

Expected<std::unique_ptr<TraceReader>> OpenUsercornBytes(std::vector<std::uint8_t> bytes,
                                                         std::string name) {
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<UsercornReader> reader,
                            UsercornReader::Open(MemorySource(std::move(bytes), std::move(name))));
  return std::unique_ptr<TraceReader>(std::move(reader));
}

Status BeginBareRecording(UsercornRecordingWriter& writer, std::span<const UsercornMapping> initial,
                          Address pc) {
  return writer.Begin(
      1, {}, initial,
      [](const UsercornMapping&, std::vector<std::uint8_t>*) { return Status::Ok(); }, pc);
}

UsercornInstruction BareInstruction(Address pc) {
  UsercornInstruction insn;
  insn.pc = pc;
  insn.size = 2;
  return insn;
}

Expected<OpenedRecording> OpenRecording(const std::string& path, const std::string& cache_dir) {
  OpenOptions options;
  options.cache_dir = cache_dir;
  OpenedRecording opened;
  BACKSTEP_ASSIGN_OR_RETURN(opened.trace, Trace::Open(path, options));
  BACKSTEP_ASSIGN_OR_RETURN(opened.cursor, opened.trace->NewCursor());
  return opened;
}

KnownBytes ReadKnownBytes(Cursor& cursor, Address address, std::size_t n) {
  KnownBytes read{std::vector<std::uint8_t>(n, 0xee), std::vector<std::uint8_t>(n, 0xee)};
  if (!cursor.ReadMemory(address, read.values, read.known).ok()) return {};
  return read;
}

std::string EventSummary(const Event& e) {
  std::string out(EventKindName(e.kind));
  out += " t" + std::to_string(e.thread.value);
  if (!e.description.empty()) out += " \"" + std::string(e.description) + "\"";
  for (const MemoryAccess& m : e.writes) {
    out += " W" + HexU64(m.address) + "=";
    if (m.data.size() <= 16) {
      out += HexBytes(m.data);
    } else {
      std::uint64_t sum = 0;
      for (std::uint8_t b : m.data) sum = sum * 31 + b;
      out += std::to_string(m.data.size()) + "B#" + HexU64(sum);
    }
  }
  for (const RegisterWrite& r : e.registers) {
    const RegisterInfo& info = X86_64().info(r.reg);
    out += " " + std::string(info.name) + (r.op == RegisterOp::kSet ? "=" : "+=");
    if (info.size <= 8) {
      std::uint64_t v = 0;
      for (int i = 0; i < info.size; ++i) v |= std::uint64_t{r.value[i]} << (8 * i);
      out += HexU64(v);
    } else {
      out += HexBytes(std::span<const std::uint8_t>(r.value, info.size));
    }
  }
  return out;
}

namespace {

// Thread 1 of a program /bin/p (text at 0x400000, one stack page), at 0x400000.
Status BeginSmallProgram(UsercornRecordingWriter& w) {
  const UsercornMapping text{0x400000, 0x2000,  kProtRead | kProtExec, 0x1000, 0x2000,
                             "/bin/p", "/bin/p"};
  const UsercornMapping stack{0x7ff000, 0x1000, kProtRead | kProtWrite, 0, 0, "[stack]", ""};
  const std::vector<UsercornMapping> initial{text, stack};
  BACKSTEP_RETURN_IF_ERROR(BeginBareRecording(w, initial, 0x400000));
  return Status::Ok();
}

}  // namespace

Status WriteNotesRecording(const std::string& path) {
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<UsercornRecordingWriter> writer,
                            CreateUsercornRecording(path));
  UsercornRecordingWriter& w = *writer;
  BACKSTEP_RETURN_IF_ERROR(BeginSmallProgram(w));
  const std::uint64_t args[6] = {};
  w.AppendInstruction(BareInstruction(0x400000));
  w.BeginSyscall(9, 0x600000, args);
  w.MemMap({0x600000, 0x3000, kProtRead | kProtWrite, 0, 0, "", ""});
  w.MemProt(0x601000, 0x1000, 0);
  w.EndSyscall();
  w.AppendInstruction(BareInstruction(0x400002));
  w.BeginSyscall(1, 3, args);
  w.EndSyscall();
  w.AppendInstruction(BareInstruction(0x400004));
  const std::vector<std::uint8_t> siginfo(128, 0x11);
  w.AppendSignal(11, siginfo, BareInstruction(0x400100));
  w.AppendInstruction(BareInstruction(0x400100));
  w.BeginSyscall(11, 0, args);
  w.MemUnmap(0x600000, 0x3000);
  w.MemUnmap(0x401000, 0x1000);
  w.EndSyscall();
  w.AppendInstruction(BareInstruction(0x400102));
  w.BeginSyscall(9, 0x600000, args);
  w.MemMap({0x600000, 0x200000, kProtRead | kProtWrite, 0, 0, "", ""});
  w.EndSyscall();
  w.AppendInstruction(BareInstruction(0x400104));
  w.AppendKilled(9);
  BACKSTEP_RETURN_IF_ERROR(w.status());
  return w.Finish();
}

Status WriteSyscallStormRecording(const std::string& path, int calls) {
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<UsercornRecordingWriter> writer,
                            CreateUsercornRecording(path));
  UsercornRecordingWriter& w = *writer;
  BACKSTEP_RETURN_IF_ERROR(BeginSmallProgram(w));
  const std::uint64_t args[6] = {3, 0x7ff000, 16};
  const std::uint32_t numbers[3] = {0, 1, 39};
  for (int i = 0; i < calls; ++i) {
    for (int k = 0; k < i % 4; ++k) w.AppendInstruction(BareInstruction(0x400010 + 2 * k));
    w.AppendInstruction(BareInstruction(0x400000));
    if (i % 100 == 99) {
      w.BeginSyscall(9, 0x600000, args);
      w.MemMap({0x600000, 0x1000, kProtRead | kProtWrite, 0, 0, "", ""});
    } else {
      w.BeginSyscall(numbers[i % 3], 16, args);
    }
    w.EndSyscall();
    if (i == calls / 2) {
      w.AppendSignal(11, {}, BareInstruction(0x400100));
    }
  }
  w.AppendInstruction(BareInstruction(0x400002));
  BACKSTEP_RETURN_IF_ERROR(w.status());
  return w.Finish();
}

}  // namespace backstep::core::testing
