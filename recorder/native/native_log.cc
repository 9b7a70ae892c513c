#include "recorder/native/native_log.h"

#include <cpuid.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

extern char** environ;

namespace backstep::record {
namespace {

constexpr char kMagic[8] = {'B', 'S', 'N', 'L', 'O', 'G', '0', '1'};

class Writer {
 public:
  void U64(std::uint64_t v) { Raw(&v, 8); }
  void Raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void Bytes(const std::vector<std::uint8_t>& v) {
    U64(v.size());
    Raw(v.data(), v.size());
  }
  void String(const std::string& s) {
    U64(s.size());
    Raw(s.data(), s.size());
  }
  const std::vector<std::uint8_t>& data() const { return out_; }

 private:
  std::vector<std::uint8_t> out_;
};

// Bounds-checked reads; the first failure is kept with its offset.
class Reader {
 public:
  Reader(const std::vector<std::uint8_t>& data, const std::string& path)
      : data_(data), path_(path) {}
  bool Raw(void* p, std::size_t n) {
    if (!ok_ || n > data_.size() - offset_) return Fail("truncated");
    std::memcpy(p, data_.data() + offset_, n);
    offset_ += n;
    return true;
  }
  std::uint64_t U64() {
    std::uint64_t v = 0;
    Raw(&v, 8);
    return v;
  }
  // A count of `unit`-byte items that must fit in what is left.
  std::uint64_t Count(std::size_t unit) {
    const std::uint64_t n = U64();
    if (ok_ && n > (data_.size() - offset_) / unit)
      Fail("count " + std::to_string(n) + " too large");
    return ok_ ? n : 0;
  }
  void Bytes(std::vector<std::uint8_t>* v) {
    v->resize(Count(1));
    Raw(v->data(), v->size());
  }
  void String(std::string* s) {
    s->resize(Count(1));
    Raw(s->data(), s->size());
  }
  bool Fail(const std::string& why) {
    if (ok_) error_ = "native log " + path_ + ": " + why + " at offset " + std::to_string(offset_);
    ok_ = false;
    return false;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return offset_ == data_.size(); }
  const std::string& error() const { return error_; }

 private:
  const std::vector<std::uint8_t>& data_;
  const std::string& path_;
  std::size_t offset_ = 0;
  bool ok_ = true;
  std::string error_;
};

}  // namespace

core::Status WriteNativeLog(const NativeLog& log, const std::string& path) {
  Writer w;
  w.Raw(kMagic, sizeof kMagic);
  w.U64(log.argv.size());
  for (const std::string& a : log.argv) w.String(a);
  w.String(log.cwd);
  w.U64(log.environment.size());
  for (const std::string& e : log.environment) w.String(e);
  w.Raw(log.at_random.data(), log.at_random.size());
  w.U64(static_cast<std::uint64_t>(log.cpuid));
  w.U64(static_cast<std::uint64_t>(static_cast<std::int64_t>(log.cpu)));
  w.Raw(log.cpu_signature.data(), sizeof log.cpu_signature);
  w.U64(log.files.size());
  for (const LoggedFile& f : log.files) {
    w.String(f.path);
    for (std::uint64_t v : {f.device, f.inode, f.size, f.mtime_ns}) w.U64(v);
  }
  w.U64(log.syscalls.size());
  for (const LoggedSyscall& s : log.syscalls) {
    w.Raw(&s.entry, sizeof s.entry);
    w.Raw(&s.exit, sizeof s.exit);
    w.U64(static_cast<std::uint64_t>(s.signal_after));
    w.U64(s.writes.size());
    for (const LoggedWrite& lw : s.writes) {
      w.U64(lw.address);
      w.Bytes(lw.bytes);
    }
  }
  w.U64(log.rdtsc.size());
  for (std::uint64_t t : log.rdtsc) w.U64(t);
  w.U64(static_cast<std::uint64_t>(log.end));
  w.U64(static_cast<std::uint64_t>(static_cast<std::int64_t>(log.status)));

  // Atomically: a temporary file next to it, renamed into place.
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(w.data().data()),
              static_cast<std::streamsize>(w.data().size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return core::Status::IOError("cannot write the native log " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return core::Status::IOError("cannot rename the native log into " + path);
  }
  return core::Status::Ok();
}

core::Expected<NativeLog> ReadNativeLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Status::NotFound("cannot open the native log " + path);
  const std::vector<std::uint8_t> data((std::istreambuf_iterator<char>(in)),
                                       std::istreambuf_iterator<char>());
  Reader r(data, path);
  char magic[8] = {};
  r.Raw(magic, sizeof magic);
  if (r.ok() && std::memcmp(magic, kMagic, sizeof magic) != 0) {
    return core::Status::Corruption("native log " + path +
                                    ": not a backstep native log (bad magic)");
  }
  NativeLog log;
  log.argv.resize(r.Count(8));
  for (std::string& a : log.argv) r.String(&a);
  r.String(&log.cwd);
  log.environment.resize(r.Count(8));
  for (std::string& e : log.environment) r.String(&e);
  r.Raw(log.at_random.data(), log.at_random.size());
  const std::uint64_t cpuid = r.U64();
  if (cpuid > 1) r.Fail("bad CPUID mode " + std::to_string(cpuid));
  log.cpuid = static_cast<NativeLog::Cpuid>(cpuid);
  log.cpu = static_cast<std::int32_t>(r.U64());
  r.Raw(log.cpu_signature.data(), sizeof log.cpu_signature);
  log.files.resize(r.Count(40));
  for (LoggedFile& f : log.files) {
    r.String(&f.path);
    for (std::uint64_t* v : {&f.device, &f.inode, &f.size, &f.mtime_ns}) *v = r.U64();
  }
  log.syscalls.resize(r.Count(2 * sizeof(user_regs_struct) + 16));
  for (LoggedSyscall& s : log.syscalls) {
    r.Raw(&s.entry, sizeof s.entry);
    r.Raw(&s.exit, sizeof s.exit);
    s.signal_after = static_cast<int>(r.U64());
    s.writes.resize(r.Count(16));
    for (LoggedWrite& lw : s.writes) {
      lw.address = r.U64();
      r.Bytes(&lw.bytes);
    }
  }
  log.rdtsc.resize(r.Count(8));
  for (std::uint64_t& t : log.rdtsc) t = r.U64();
  const std::uint64_t end = r.U64();
  if (end > 1) r.Fail("bad end " + std::to_string(end));
  log.end = static_cast<NativeLog::End>(end);
  log.status = static_cast<std::int32_t>(r.U64());
  if (r.ok() && !r.at_end()) r.Fail("trailing bytes");
  if (!r.ok()) return core::Status::Corruption(r.error());
  return log;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

std::array<std::uint32_t, 12> CpuSignature() {
  std::array<std::uint32_t, 12> s{};
  for (unsigned i = 0; i < 3; ++i) {
    const unsigned leaf = i == 2 ? 7 : i;
    __cpuid_count(leaf, 0, s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]);
  }
  // Leaf 1's ebx holds the APIC id of the CPU asking: not part of the model.
  s[5] &= 0x00ffffff;
  return s;
}

}  // namespace backstep::record
