#include "testing/resume_points.h"

#include <algorithm>
#include <memory>
#include <utility>

namespace backstep::core::testing {
namespace {

class ResumePointReader final : public TraceReader {
 public:
  ResumePointReader(std::unique_ptr<TraceReader> inner,
                    std::shared_ptr<const std::vector<ResumePoint>> points)
      : inner_(std::move(inner)), points_(std::move(points)) {}

  const TraceHeader& header() const override { return inner_->header(); }
  const ByteSource& source() const override { return inner_->source(); }
  std::vector<std::pair<ThreadId, RegisterFile>> InitialRegisters() const override {
    return inner_->InitialRegisters();
  }
  void ReadInitialMemory(Address address, std::span<std::uint8_t> out,
                         std::span<std::uint8_t> known) const override {
    inner_->ReadInitialMemory(address, out, known);
  }
  ReaderPosition Tell() const override { return inner_->Tell(); }
  Status Seek(const ReaderPosition& pos) override { return inner_->Seek(pos); }
  Expected<bool> Next(Event* event) override { return inner_->Next(event); }
  std::vector<ResumePoint> ResumePoints() const override { return *points_; }

 private:
  std::unique_ptr<TraceReader> inner_;
  std::shared_ptr<const std::vector<ResumePoint>> points_;
};

}  // namespace

Expected<ReaderFactory> WithResumePoints(
    ReaderFactory inner, const std::vector<std::uint64_t>& positions,
    const std::function<void(std::vector<ResumePoint>&)>& tamper) {
  BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> replay, inner());
  const ArchDescription& arch = *replay->header().arch;
  std::vector<std::pair<ThreadId, RegisterFile>> threads = replay->InitialRegisters();
  auto regs_of = [&](ThreadId tid) -> RegisterFile& {
    for (auto& [t, regs] : threads) {
      if (t == tid) return regs;
    }
    threads.emplace_back(tid, RegisterFile(arch));
    return threads.back().second;
  };
  auto points = std::make_shared<std::vector<ResumePoint>>();
  std::vector<std::uint64_t> wanted = positions;
  std::sort(wanted.begin(), wanted.end());
  Event e;
  std::size_t next = 0;
  for (std::uint64_t n = 0; next < wanted.size(); ++n) {
    while (next < wanted.size() && wanted[next] == n) {
      points->push_back({Position(n), replay->Tell(), threads});
      ++next;
    }
    BACKSTEP_ASSIGN_OR_RETURN(bool more, replay->Next(&e));
    if (!more) break;
    RegisterFile& regs = regs_of(e.thread);
    if (e.flags & kEventClearsRegisters) regs.Clear();
    for (const RegisterWrite& w : e.registers) regs.Apply(w);
  }
  if (tamper) tamper(*points);
  std::shared_ptr<const std::vector<ResumePoint>> shared = points;
  return ReaderFactory([inner, shared]() -> Expected<std::unique_ptr<TraceReader>> {
    BACKSTEP_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> r, inner());
    return std::unique_ptr<TraceReader>(new ResumePointReader(std::move(r), shared));
  });
}

}  // namespace backstep::core::testing
