#include "recorder/native/spool_sink.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

// Appends records to the sink's buffer (written out a megabyte at a time:
// stdio's per-call locking was a third of materialization's time).
class Out {
 public:
  explicit Out(std::vector<std::uint8_t>& buffer) : b_(buffer) {}
  void U64(std::uint64_t v) { Raw(&v, 8); }
  void U8(std::uint8_t v) { b_.push_back(v); }
  void Raw(const void* p, std::size_t n) {
    if (n == 0) return;
    const std::size_t at = b_.size();
    b_.resize(at + n);
    std::memcpy(b_.data() + at, p, n);
  }
  void Varint(std::uint64_t v) {
    while (v >= 0x80) {
      U8(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    U8(static_cast<std::uint8_t>(v));
  }
  void Bytes(std::span<const std::uint8_t> b) {
    Varint(b.size());
    Raw(b.data(), b.size());
  }
  void String(const std::string& s) {
    Varint(s.size());
    Raw(s.data(), s.size());
  }
  // Each value without its trailing zero bytes (most are 8 of 64).
  void Registers(std::span<const core::RegisterWrite> regs) {
    Varint(regs.size());
    for (const core::RegisterWrite& r : regs) {
      std::uint8_t length = sizeof r.value;
      while (length > 0 && r.value[length - 1] == 0) --length;
      Raw(&r.reg, 2);
      U8(static_cast<std::uint8_t>(r.op));
      U8(length);
      Raw(r.value, length);
    }
  }
  void Memory(std::span<const core::MemoryAccess> accesses) {
    Varint(accesses.size());
    for (const core::MemoryAccess& a : accesses) {
      U64(a.address);
      Bytes(a.data);
    }
  }
  void Mappings(std::span<const Mapping> maps) {
    Varint(maps.size());
    for (const Mapping& m : maps) {
      U64(m.start);
      U64(m.size);
      U8((m.read ? 1 : 0) | (m.write ? 2 : 0) | (m.exec ? 4 : 0));
      U64(m.file_offset);
      String(m.name);
    }
  }

 private:
  std::vector<std::uint8_t>& b_;
};

// The spool's records, read from its mapping; the spans it hands out stay
// valid until Clear() (bytes point into the mapping; registers, accesses
// and mappings are kept in pools whose storage Clear() reuses).
class In : public Reader {
 public:
  In(const std::uint8_t* data, std::uint64_t size, const std::string& path)
      : Reader(data, size, "spool " + path) {}
  // A varint count of `unit`-byte items that must fit in what is left.
  std::uint64_t Count(std::size_t unit) {
    std::uint64_t n = 0;
    for (int shift = 0;; shift += 7) {
      const std::uint8_t b = U8();
      if (!ok()) return 0;
      if (shift == 63 && b > 1) {
        Fail("bad count");
        return 0;
      }
      n |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    if (n > left() / unit) {
      Fail("count " + std::to_string(n) + " too large");
      return 0;
    }
    return n;
  }
  std::span<const std::uint8_t> Bytes() {
    const std::uint64_t n = Count(1);
    const std::uint8_t* at = Take(n);
    return at ? std::span<const std::uint8_t>(at, n) : std::span<const std::uint8_t>();
  }
  std::string String() {
    const std::span<const std::uint8_t> b = Bytes();
    return std::string(b.begin(), b.end());
  }
  std::span<const core::RegisterWrite> Registers() {
    std::vector<core::RegisterWrite>& regs = Next(registers_, used_registers_);
    regs.resize(Count(4));
    for (core::RegisterWrite& r : regs) {
      Raw(&r.reg, 2);
      r.op = static_cast<core::RegisterOp>(U8());
      const std::uint8_t length = U8();
      if (length > sizeof r.value) Fail("register value of " + std::to_string(length) + " bytes");
      std::memset(r.value, 0, sizeof r.value);
      if (ok()) Raw(r.value, length);
    }
    return regs;
  }
  std::span<const core::MemoryAccess> Memory() {
    std::vector<core::MemoryAccess>& out = Next(accesses_, used_accesses_);
    out.resize(Count(9));
    for (core::MemoryAccess& a : out) {
      a.address = U64();
      a.data = Bytes();
    }
    return out;
  }
  std::span<const Mapping> Mappings() {
    std::vector<Mapping>& out = Next(mappings_, used_mappings_);
    out.resize(Count(26));
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
  // Lets the next record reuse the storage of the record just replayed.
  void Clear() { used_registers_ = used_accesses_ = used_mappings_ = 0; }

 private:
  // The pool's next vector (deques: a span handed out stays valid while
  // more are added).
  template <class T>
  static std::vector<T>& Next(std::deque<std::vector<T>>& pool, std::size_t& used) {
    if (used == pool.size()) pool.emplace_back();
    return pool[used++];
  }
  std::deque<std::vector<core::RegisterWrite>> registers_;
  std::deque<std::vector<core::MemoryAccess>> accesses_;
  std::deque<std::vector<Mapping>> mappings_;
  std::size_t used_registers_ = 0, used_accesses_ = 0, used_mappings_ = 0;
};

// A spool file mapped read-only, unmapped when it goes.
class MappedSpool {
 public:
  ~MappedSpool() {
    if (data_ && size_) munmap(data_, size_);
  }
  core::Status Open(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return core::Status::NotFound("cannot open the spool " + path);
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      close(fd);
      return core::Status::IOError("cannot stat the spool " + path);
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      void* at = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (at == MAP_FAILED) {
        close(fd);
        size_ = 0;
        return core::Status::IOError("cannot map the spool " + path + ": " + std::strerror(errno));
      }
      data_ = static_cast<std::uint8_t*>(at);
      madvise(data_, size_, MADV_SEQUENTIAL);
    }
    close(fd);
    return core::Status::Ok();
  }
  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace

core::Expected<std::unique_ptr<SpoolSink>> SpoolSink::Create(const std::string& path,
                                                             bool keep_start) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return core::Status::IOError("cannot create " + path + ": " + std::strerror(errno));
  return std::unique_ptr<SpoolSink>(new SpoolSink(f, keep_start));
}

void SpoolSink::Flush() {
  if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
    failed_ = true;
  buffer_.clear();
}

SpoolSink::~SpoolSink() {
  if (!file_) return;
  Flush();  // a worker that failed keeps what it wrote before
  std::fclose(file_);
}

core::Status SpoolSink::OnStart(const StartInfo& start) {
  if (!keep_start_) return core::Status::Ok();
  Out o(buffer_);
  o.U8(kStart);
  o.U64(start.pid);
  o.String(start.executable);
  o.Bytes(start.auxv);
  o.Mappings(start.mappings);
  std::vector<std::uint8_t> contents;
  for (const Mapping& m : start.mappings) {
    if (core::Status s = start.contents(m, &contents); !s.ok()) return s;
    o.Bytes(contents);
    Flush();
  }
  o.Registers(start.registers);
  o.U64(start.pc);
  Flush();
  return core::Status::Ok();
}

void SpoolSink::OnInstruction(const InstructionRecord& insn) {
  Out o(buffer_);
  o.U8(kInsn);
  o.U64(insn.pc);
  o.U8(insn.size);
  o.Registers(insn.registers);
  o.Memory(insn.writes);
  o.Memory(insn.reads);
  if (buffer_.size() >= kFlushBytes) Flush();
}

void SpoolSink::OnSyscall(const SyscallRecord& sys) {
  Out o(buffer_);
  o.U8(kSys);
  o.U64(sys.number);
  o.U64(sys.result);
  o.Raw(sys.args, sizeof sys.args);
  o.Mappings(sys.unmapped);
  o.Mappings(sys.mapped);
  o.Mappings(sys.protected_);
  o.Memory(sys.writes);
  o.Registers(sys.registers);
  if (buffer_.size() >= kFlushBytes) Flush();
}

void SpoolSink::OnSignal(const SignalRecord& signal) {
  Out o(buffer_);
  o.U8(kSig);
  o.U64(static_cast<std::uint64_t>(signal.signal));
  o.U64(signal.handler);
  o.Bytes(signal.siginfo);
  o.Registers(signal.registers);
  o.Memory(signal.writes);
  if (buffer_.size() >= kFlushBytes) Flush();
}

void SpoolSink::OnKilled(int signal) {
  Out o(buffer_);
  o.U8(kKill);
  o.U64(static_cast<std::uint64_t>(signal));
}

core::Status SpoolSink::Finish(bool exited) {
  Out o(buffer_);
  o.U8(kEnd);
  o.U8(exited ? 1 : 0);
  Flush();
  const bool flushed = !failed_ && std::fflush(file_) == 0 && !std::ferror(file_);
  std::fclose(file_);
  file_ = nullptr;
  return flushed ? core::Status::Ok() : core::Status::IOError("cannot write a spool file");
}

core::Expected<SpoolCounts> ReplaySpool(const std::string& path, RecordingSink& sink,
                                        bool with_start) {
  MappedSpool file;
  if (core::Status s = file.Open(path); !s.ok()) return s;
  In in(file.data(), file.size(), path);
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
  if (!in.ok()) return core::Status::Corruption(in.error());
  if (!status.ok()) return status;
  return counts;
}

}  // namespace backstep::record
