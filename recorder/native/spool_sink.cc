#include "recorder/native/spool_sink.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

#include "recorder/native/native_io.h"

namespace backstep::record {
namespace {

enum Tag : std::uint8_t {
  kStart = 'S',
  kInsn = 'I',
  kSys = 'Y',
  kSig = 'G',
  kKill = 'K',
  kEnd = 'F'
};

class Out {
 public:
  explicit Out(std::FILE* f) : f_(f) {}
  void U64(std::uint64_t v) { Raw(&v, 8); }
  void U8(std::uint8_t v) { Raw(&v, 1); }
  void Raw(const void* p, std::size_t n) {
    if (n) std::fwrite(p, 1, n, f_);
  }
  void Bytes(std::span<const std::uint8_t> b) {
    U64(b.size());
    Raw(b.data(), b.size());
  }
  void String(const std::string& s) {
    U64(s.size());
    Raw(s.data(), s.size());
  }
  void Registers(std::span<const core::RegisterWrite> regs) {
    U64(regs.size());
    for (const core::RegisterWrite& r : regs) {
      Raw(&r.reg, 2);
      U8(static_cast<std::uint8_t>(r.op));
      Raw(r.value, sizeof r.value);
    }
  }
  void Memory(std::span<const core::MemoryAccess> accesses) {
    U64(accesses.size());
    for (const core::MemoryAccess& a : accesses) {
      U64(a.address);
      Bytes(a.data);
    }
  }
  void Mappings(std::span<const Mapping> maps) {
    U64(maps.size());
    for (const Mapping& m : maps) {
      U64(m.start);
      U64(m.size);
      U8((m.read ? 1 : 0) | (m.write ? 2 : 0) | (m.exec ? 4 : 0));
      U64(m.file_offset);
      String(m.name);
    }
  }

 private:
  std::FILE* f_;
};

// The spool's records, read through a Reader over the file; the spans it
// hands out stay valid until Clear().
class In : public Reader {
 public:
  In(std::FILE* f, std::uint64_t size, const std::string& path)
      : Reader(f, size, "spool " + path) {}
  std::span<const std::uint8_t> Bytes() {
    std::vector<std::uint8_t>& b = buffers_.emplace_back();
    Reader::Bytes(&b);
    return b;
  }
  std::string String() {
    std::string s;
    Reader::String(&s);
    return s;
  }
  std::span<const core::RegisterWrite> Registers() {
    std::vector<core::RegisterWrite>& regs = registers_.emplace_back(Count(67));
    for (core::RegisterWrite& r : regs) {
      Raw(&r.reg, 2);
      r.op = static_cast<core::RegisterOp>(U8());
      Raw(r.value, sizeof r.value);
    }
    return regs;
  }
  std::span<const core::MemoryAccess> Memory() {
    std::vector<core::MemoryAccess>& out = accesses_.emplace_back(Count(16));
    for (core::MemoryAccess& a : out) {
      a.address = U64();
      a.data = Bytes();
    }
    return out;
  }
  std::span<const Mapping> Mappings() {
    std::vector<Mapping>& out = mappings_.emplace_back(Count(33));
    for (Mapping& m : out) {
      m.start = U64();
      m.size = U64();
      const std::uint8_t flags = U8();
      m.read = flags & 1, m.write = flags & 2, m.exec = flags & 4;
      m.file_offset = U64();
      m.name = String();
    }
    return out;
  }
  // Forgets the storage of the record just replayed.
  void Clear() {
    buffers_.clear();
    registers_.clear();
    accesses_.clear();
    mappings_.clear();
  }

 private:
  // Deques: a span handed out stays valid while more are added.
  std::deque<std::vector<std::uint8_t>> buffers_;
  std::deque<std::vector<core::RegisterWrite>> registers_;
  std::deque<std::vector<core::MemoryAccess>> accesses_;
  std::deque<std::vector<Mapping>> mappings_;
};

}  // namespace

core::Expected<std::unique_ptr<SpoolSink>> SpoolSink::Create(const std::string& path,
                                                             bool keep_start) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return core::Status::IOError("cannot create " + path + ": " + std::strerror(errno));
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  return std::unique_ptr<SpoolSink>(new SpoolSink(f, keep_start));
}

SpoolSink::~SpoolSink() {
  if (file_) std::fclose(file_);
}

core::Status SpoolSink::OnStart(const StartInfo& start) {
  if (!keep_start_) return core::Status::Ok();
  Out o(file_);
  o.U8(kStart);
  o.U64(start.pid);
  o.String(start.executable);
  o.Bytes(start.auxv);
  o.Mappings(start.mappings);
  std::vector<std::uint8_t> contents;
  for (const Mapping& m : start.mappings) {
    if (core::Status s = start.contents(m, &contents); !s.ok()) return s;
    o.Bytes(contents);
  }
  o.Registers(start.registers);
  o.U64(start.pc);
  return core::Status::Ok();
}

void SpoolSink::OnInstruction(const InstructionRecord& insn) {
  Out o(file_);
  o.U8(kInsn);
  o.U64(insn.pc);
  o.U8(insn.size);
  o.Registers(insn.registers);
  o.Memory(insn.writes);
  o.Memory(insn.reads);
}

void SpoolSink::OnSyscall(const SyscallRecord& sys) {
  Out o(file_);
  o.U8(kSys);
  o.U64(sys.number);
  o.U64(sys.result);
  o.Raw(sys.args, sizeof sys.args);
  o.Mappings(sys.unmapped);
  o.Mappings(sys.mapped);
  o.Mappings(sys.protected_);
  o.Memory(sys.writes);
  o.Registers(sys.registers);
}

void SpoolSink::OnSignal(const SignalRecord& signal) {
  Out o(file_);
  o.U8(kSig);
  o.U64(static_cast<std::uint64_t>(signal.signal));
  o.U64(signal.handler);
  o.Bytes(signal.siginfo);
  o.Registers(signal.registers);
  o.Memory(signal.writes);
}

void SpoolSink::OnKilled(int signal) {
  Out o(file_);
  o.U8(kKill);
  o.U64(static_cast<std::uint64_t>(signal));
}

core::Status SpoolSink::Finish(bool exited) {
  Out o(file_);
  o.U8(kEnd);
  o.U8(exited ? 1 : 0);
  const bool flushed = std::fflush(file_) == 0 && !std::ferror(file_);
  std::fclose(file_);
  file_ = nullptr;
  return flushed ? core::Status::Ok() : core::Status::IOError("cannot write a spool file");
}

core::Expected<SpoolCounts> ReplaySpool(const std::string& path, RecordingSink& sink,
                                        bool with_start) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return core::Status::NotFound("cannot open the spool " + path);
  struct stat st {};
  fstat(fileno(f), &st);
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  In in(f, static_cast<std::uint64_t>(st.st_size), path);
  SpoolCounts counts;
  core::Status status = core::Status::Ok();
  while (in.ok() && !in.at_end() && status.ok() && !counts.finished) {
    in.Clear();
    switch (in.U8()) {
      case kStart: {
        StartInfo start;
        start.pid = in.U64();
        start.executable = in.String();
        std::span<const std::uint8_t> auxv = in.Bytes();
        start.auxv.assign(auxv.begin(), auxv.end());
        std::span<const Mapping> maps = in.Mappings();
        start.mappings.assign(maps.begin(), maps.end());
        std::vector<std::span<const std::uint8_t>> contents;
        for (std::size_t i = 0; i < maps.size(); ++i) contents.push_back(in.Bytes());
        start.contents = [&](const Mapping& m, std::vector<std::uint8_t>* out) {
          for (std::size_t i = 0; i < start.mappings.size(); ++i) {
            if (start.mappings[i].start == m.start) {
              out->assign(contents[i].begin(), contents[i].end());
              return core::Status::Ok();
            }
          }
          return core::Status::NotFound("spool: no contents for a mapping");
        };
        start.registers = in.Registers();
        start.pc = in.U64();
        if (in.ok() && with_start) status = sink.OnStart(start);
        break;
      }
      case kInsn: {
        InstructionRecord insn;
        insn.pc = in.U64();
        insn.size = in.U8();
        insn.registers = in.Registers();
        insn.writes = in.Memory();
        insn.reads = in.Memory();
        if (in.ok()) sink.OnInstruction(insn), ++counts.positions;
        break;
      }
      case kSys: {
        SyscallRecord sys;
        sys.number = static_cast<std::uint32_t>(in.U64());
        sys.result = in.U64();
        in.Raw(sys.args, sizeof sys.args);
        sys.unmapped = in.Mappings();
        sys.mapped = in.Mappings();
        sys.protected_ = in.Mappings();
        sys.writes = in.Memory();
        sys.registers = in.Registers();
        if (in.ok()) sink.OnSyscall(sys);
        break;
      }
      case kSig: {
        SignalRecord signal;
        signal.signal = static_cast<int>(in.U64());
        signal.handler = in.U64();
        signal.siginfo = in.Bytes();
        signal.registers = in.Registers();
        signal.writes = in.Memory();
        if (in.ok()) sink.OnSignal(signal), ++counts.positions;
        break;
      }
      case kKill:
        counts.killed = static_cast<int>(in.U64());
        break;
      case kEnd:
        counts.exited = in.U8() != 0;
        counts.finished = in.ok();
        break;
      default:
        in.Fail("bad record");
    }
  }
  std::fclose(f);
  if (!in.ok()) return core::Status::Corruption(in.error());
  if (!status.ok()) return status;
  return counts;
}

}  // namespace backstep::record
