// Range queries cost what they find, not the length asked: History,
// LastWrite and a watchpoint continue over [0, length) of generated traces
// of virtual addresses, for lengths from one page to the whole 64-bit space
// and traces with more or fewer writes.
//
//   build/bench/backstep_bench --benchmark_filter=Range
// Counters: accesses found (History) and the writes in the trace; the time
// per query should follow them and stay flat as the length grows.
#include <map>
#include <memory>

#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "benchmark/benchmark.h"

namespace backstep::core {
namespace {

// One trace per event count, built (with its index, in memory) once.
const Trace& TraceOf(std::size_t events) {
  static std::map<std::size_t, std::shared_ptr<Trace>> traces;
  auto& trace = traces[events];
  if (!trace) {
    testing::FakeTraceOptions o;
    o.events = events;
    o.seed = 3;
    trace = testing::OpenFakeInMemory(testing::GenerateFakeTrace(o)).value();
  }
  return *trace;
}

// Lengths: 4 KiB, 1 MiB, 1 GiB, 1 TiB, the whole space.
std::uint64_t Length(std::int64_t arg) {
  return arg >= 64 ? ~std::uint64_t(0) - 1 : std::uint64_t(1) << arg;
}

void BM_RangeHistory(benchmark::State& state) {
  const Trace& trace = TraceOf(static_cast<std::size_t>(state.range(0)));
  const std::uint64_t length = Length(state.range(1));
  std::size_t found = 0;
  for (auto _ : state) {
    auto accesses =
        History(trace, 0, length, Position(0), Position(trace.event_count()), std::size_t(1) << 30);
    found = accesses.ok() ? accesses->size() : 0;
    benchmark::DoNotOptimize(found);
  }
  state.counters["accesses"] = static_cast<double>(found);
}
BENCHMARK(BM_RangeHistory)
    ->ArgsProduct({{2000, 20000}, {12, 20, 30, 40, 64}})
    ->Unit(benchmark::kMillisecond);

void BM_RangeLastWrite(benchmark::State& state) {
  const Trace& trace = TraceOf(static_cast<std::size_t>(state.range(0)));
  const std::uint64_t length = Length(state.range(1));
  for (auto _ : state) {
    auto w = LastWrite(trace, 0, length, Position(trace.event_count() / 2));
    benchmark::DoNotOptimize(w);
  }
}
BENCHMARK(BM_RangeLastWrite)
    ->ArgsProduct({{2000, 20000}, {12, 20, 30, 40, 64}})
    ->Unit(benchmark::kMicrosecond);

void BM_RangeWatchContinue(benchmark::State& state) {
  const Trace& trace = TraceOf(static_cast<std::size_t>(state.range(0)));
  StopCondition c;
  c.watches.push_back(Watch{0, Length(state.range(1)), WatchKind::kWrite, true});
  for (auto _ : state) {
    auto stop = RunUntil(trace, Position(trace.event_count() / 2), Direction::kForward, c);
    benchmark::DoNotOptimize(stop);
  }
}
BENCHMARK(BM_RangeWatchContinue)
    ->ArgsProduct({{2000, 20000}, {12, 20, 30, 40, 64}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace backstep::core
