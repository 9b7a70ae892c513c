#include "recorder/native/snapshot_file.h"

#include "recorder/native/native_io.h"

namespace backstep::record {
namespace {

constexpr char kMagic[8] = {'B', 'S', 'N', 'S', 'N', 'P', '0', '1'};
constexpr std::uint64_t kPage = 4096;

}  // namespace

core::Status WriteSnapshot(const Snapshot& s, const std::string& path) {
  Writer w;
  w.Raw(kMagic, sizeof kMagic);
  w.U64(s.syscall);
  w.U64(s.rdtsc);
  w.Raw(&s.regs, sizeof s.regs);
  w.Bytes(s.xstate);
  w.U64(s.sigmask);
  w.U64(s.signals.actions.size());
  for (const auto& [sig, action] : s.signals.actions) {
    w.U64(static_cast<std::uint64_t>(sig));
    w.Raw(action.data(), action.size());
  }
  w.Bytes(s.signals.altstack);
  w.U64(s.mappings.size());
  for (const SnapshotMapping& m : s.mappings) {
    w.U64(m.start);
    w.U64(m.size);
    w.U64(m.prot);
  }
  w.U64(s.memory.size());
  for (const LoggedWrite& run : s.memory) {
    w.U64(run.address);
    w.Bytes(run.bytes);
  }
  return WriteFileAtomically(path, w.data(), "the snapshot");
}

core::Expected<Snapshot> ReadSnapshot(const std::string& path) {
  core::Expected<std::vector<std::uint8_t>> file = ReadWholeFile(path, "the snapshot");
  if (!file.ok()) return file.status();
  return ParseSnapshot(*file, path);
}

core::Expected<Snapshot> ParseSnapshot(std::span<const std::uint8_t> data,
                                       const std::string& path) {
  Reader r(data.data(), data.size(), "snapshot " + path);
  if (!r.Magic(kMagic))
    return core::Status::Corruption("snapshot " + path + ": not a backstep snapshot (bad magic)");
  Snapshot s;
  s.syscall = r.U64();
  s.rdtsc = r.U64();
  r.Raw(&s.regs, sizeof s.regs);
  r.Bytes(&s.xstate);
  s.sigmask = r.U64();
  const std::uint64_t actions = r.Count(40);
  for (std::uint64_t i = 0; i < actions && r.ok(); ++i) {
    const std::uint64_t sig = r.U64();
    if (sig == 0 || sig > 64) r.Fail("bad signal " + std::to_string(sig));
    r.Raw(s.signals.actions[static_cast<int>(sig)].data(), sizeof(KernelSigaction));
  }
  r.Bytes(&s.signals.altstack);
  if (r.ok() && !s.signals.altstack.empty() && s.signals.altstack.size() != 24)
    r.Fail("bad alternate stack");
  s.mappings.resize(r.Count(24));
  for (SnapshotMapping& m : s.mappings) {
    m.start = r.U64();
    m.size = r.U64();
    m.prot = static_cast<std::uint8_t>(r.U64());
    if (r.ok() && (m.start % kPage || m.size % kPage || m.size == 0 || m.start + m.size < m.start))
      r.Fail("bad mapping");
  }
  s.memory.resize(r.Count(16));
  for (LoggedWrite& run : s.memory) {
    run.address = r.U64();
    r.Bytes(&run.bytes);
    if (r.ok() && run.address + run.bytes.size() < run.address) r.Fail("bad memory run");
  }
  if (r.ok() && !r.at_end()) r.Fail("trailing bytes");
  if (!r.ok()) return core::Status::Corruption(r.error());
  return s;
}

}  // namespace backstep::record
