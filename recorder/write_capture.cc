#include "recorder/write_capture.h"

#include "recorder/syscall_effects.h"

namespace backstep::record {

void WriteBuffer::Add(core::Address address, std::span<const std::uint8_t> bytes) {
  data_.insert(data_.end(), bytes.begin(), bytes.end());
  if (merge_contiguous_ && !spans_.empty()) {
    auto& [last, size] = spans_.back();
    if (last + size == address) {
      size += bytes.size();
      return;
    }
  }
  spans_.push_back({address, bytes.size()});
}

std::span<const core::MemoryAccess> WriteBuffer::Build() {
  writes_.clear();
  std::size_t offset = 0;
  for (const auto& [address, size] : spans_) {
    writes_.push_back({address, std::span<const std::uint8_t>(data_).subspan(offset, size)});
    offset += size;
  }
  return writes_;
}

void CaptureWrites(const Tracee& tracee, std::span<const Range> ranges, AddressSpace* space,
                   WriteBuffer* out) {
  std::vector<std::uint8_t> bytes;
  std::vector<Range> changed;
  for (const Range& r : ranges) {
    bytes.resize(r.size);
    const std::size_t n = tracee.ReadMemory(r.start, bytes);
    if (n == 0) continue;
    const std::span<const std::uint8_t> read = std::span(bytes).first(n);
    if (!r.maybe) {
      space->Note(r.start, read);
      out->Add(r.start, read);
      continue;
    }
    // A maybe-write: keep only what differs from the trace's view.
    changed.clear();
    space->Changed(r.start, read, &changed);
    for (const Range& c : changed) {
      const std::span<const std::uint8_t> run = read.subspan(c.start - r.start, c.size);
      space->Note(c.start, run);
      out->Add(c.start, run);
    }
  }
}

core::Status UpdateMappings(const Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6],
                            std::uint64_t result, AddressSpace* space, MapChanges* maps) {
  constexpr std::uint64_t kPage = 4096;
  const auto pages = [](std::uint64_t n) { return (n + kPage - 1) / kPage * kPage; };
  std::vector<Range> fresh;
  if (nr == kSysMmap) fresh.push_back({result, pages(args[1])});
  if (nr == kSysMremap) fresh.push_back({result, pages(args[2])});
  return space->Update(tracee, fresh, maps);
}

bool SyscallWrites(const Tracee& tracee, std::uint64_t nr, const std::uint64_t args[6],
                   std::uint64_t result, AddressSpace* space, std::vector<Range>* ranges) {
  if (KnownOutputs(nr, args, result, ranges)) return false;
  ranges->clear();
  space->Diff(tracee, ranges);
  return true;
}

void AddNewMappingContents(const Tracee& tracee, const MapChanges& maps, WriteBuffer* out) {
  for (const Range& c : maps.contents) {
    std::vector<std::uint8_t> buf(c.size);
    tracee.ReadMemoryZeroFill(c.start, buf);
    ForEachNonZeroRun(buf, [&](std::size_t offset, std::size_t length) {
      out->Add(c.start + offset, std::span(buf).subspan(offset, length));
    });
  }
}

}  // namespace backstep::record
