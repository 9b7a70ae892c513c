// Benchmarks of the core on a generated REVEN trace (docs/architecture.md's budgets).
//
//   build/bench/backstep_bench [--benchmark_filter=...]
// Environment:
//   BACKSTEP_BENCH_EVENTS  events in the generated trace (default 10^7; 10^8 works, ~25 GB RAM free
//                          not needed: generation and indexing stream)
//   BACKSTEP_BENCH_DIR     where the trace and its index go (default /tmp/backstep-bench)
//   BACKSTEP_BENCH_SNAPSHOT_BLOCKS  blocks between an access list's page snapshots when the
//                          index is built by the run (default: the index's, 128)
// Latency benchmarks report p50/p99 in microseconds as counters.
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/format_registry.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "backstep/testing/reven_generator.h"
#include "benchmark/benchmark.h"

namespace backstep::core {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Fixture {
  std::string path;
  testing::RevenGenInfo info;
  std::shared_ptr<Trace> trace;
};

std::uint64_t EnvU64(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 0) : fallback;
}

// The generator's facts the benchmarks need, kept beside the trace so that a
// second run reuses the trace (and its index) instead of regenerating it.
void SaveInfo(const std::string& path, const testing::RevenGenInfo& info) {
  std::ofstream out(path + ".info");
  out << "events " << info.events << "\nfar_pc " << info.far_pc << "\nonce_address "
      << info.once_address << "\nonce_size " << info.once_size << "\n";
  for (const auto& page : info.pages) out << "page " << page.virtual_address << "\n";
}

bool LoadInfo(const std::string& path, testing::RevenGenInfo* info) {
  std::ifstream in(path + ".info");
  if (!in || !fs::exists(path)) return false;
  std::string key;
  std::uint64_t value;
  while (in >> key >> value) {
    if (key == "events") info->events = value;
    if (key == "far_pc") info->far_pc = value;
    if (key == "once_address") info->once_address = value;
    if (key == "once_size") info->once_size = value;
    if (key == "page") info->pages.push_back({value, 0});
  }
  return info->events != 0 && !info->pages.empty();
}

Fixture& GetFixture() {
  static Fixture* f = [] {
    auto* fx = new Fixture;
    fs::path dir = std::getenv("BACKSTEP_BENCH_DIR") ? std::getenv("BACKSTEP_BENCH_DIR")
                                                     : "/tmp/backstep-bench";
    fs::create_directories(dir);
    testing::RevenGenOptions opts;
    opts.events = EnvU64("BACKSTEP_BENCH_EVENTS", 10'000'000);
    opts.seed = 42;
    // A trace.cache point every 1/16 of the trace (the parallel build's
    // split candidates; REVEN writes one every N instructions).
    opts.cache_every = std::max<std::uint64_t>(opts.events / 16, 1);
    fx->path = (dir / ("trace-" + std::to_string(opts.events) + "-cache.bin")).string();
    if (LoadInfo(fx->path, &fx->info)) return fx;
    auto info = testing::GenerateRevenTrace(fx->path, opts);
    if (!info.ok()) {
      std::fprintf(stderr, "generate: %s\n", info.status().ToString().c_str());
      std::exit(1);
    }
    fx->info = *info;
    SaveInfo(fx->path, fx->info);
    return fx;
  }();
  return *f;
}

std::shared_ptr<Trace> OpenIndexed() {
  Fixture& f = GetFixture();
  if (!f.trace) {
    // BACKSTEP_BENCH_SNAPSHOT_BLOCKS: blocks between page snapshots when the
    // index is built here (an index already beside the trace is reused).
    OpenOptions options;
    options.index_snapshot_blocks =
        static_cast<std::uint32_t>(EnvU64("BACKSTEP_BENCH_SNAPSHOT_BLOCKS", 0));
    // As `serve` opens traces (BACKSTEP_BENCH_MAP_CACHED=0: as other commands).
    options.map_in_cached_trace = EnvU64("BACKSTEP_BENCH_MAP_CACHED", 1) != 0;
    auto t = Trace::Open(f.path, options);
    if (!t.ok()) {
      std::fprintf(stderr, "open: %s\n", t.status().ToString().c_str());
      std::exit(1);
    }
    f.trace = *t;
  }
  return f.trace;
}

void ReportPercentiles(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  state.counters["max_us"] = us.back();
}

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// CPU time of the calling thread in microseconds: on a machine shared with
// other work, wall-clock percentiles measure preemption as much as the code.
double ThreadCpuMicros() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

void ReportCpuPercentiles(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_cpu_us"] = us[us.size() / 2];
  state.counters["p99_cpu_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
}

// Reading the trace file sequentially (hot cache): the yardstick for indexing.
void BM_SequentialRead(benchmark::State& state) {
  Fixture& f = GetFixture();
  std::vector<char> buf(1 << 20);
  std::uint64_t total = 0;
  for (auto _ : state) {
    int fd = open(f.path.c_str(), O_RDONLY);
    ssize_t n;
    while ((n = read(fd, buf.data(), buf.size())) > 0) total += static_cast<std::uint64_t>(n);
    close(fd);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(total));
}
BENCHMARK(BM_SequentialRead)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// Decoding every event with the REVEN reader (no index work).
void BM_DecodeAllEvents(benchmark::State& state) {
  Fixture& f = GetFixture();
  std::uint64_t events = 0;
  for (auto _ : state) {
    auto reader = OpenTraceFile(f.path);
    Event e;
    while (true) {
      auto more = (*reader)->Next(&e);
      if (!more.ok() || !*more) break;
      ++events;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
  state.SetBytesProcessed(static_cast<std::int64_t>(fs::file_size(f.path) * state.iterations()));
}
BENCHMARK(BM_DecodeAllEvents)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// Building the index from scratch, written atomically, in wall time: arg 1 =
// the single pass, arg 0 = one part per core from the trace.cache's resume
// points (index_parts = 0).
void BM_IndexBuild(benchmark::State& state) {
  Fixture& f = GetFixture();
  OpenOptions options;
  options.index_parts = static_cast<unsigned>(state.range(0));
  // CPU time of every thread of the process (the benchmark's own CPU column
  // counts the calling thread only).
  auto process_cpu = [] {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  double cpu = 0;
  for (auto _ : state) {
    state.PauseTiming();
    f.trace.reset();
    fs::remove(f.path + ".bsidx");
    const double cpu_before = process_cpu();
    state.ResumeTiming();
    auto t = Trace::Open(f.path, options);
    if (!t.ok()) state.SkipWithError(t.status().ToString().c_str());
    state.PauseTiming();
    cpu += process_cpu() - cpu_before;
    f.trace = *t;
    state.ResumeTiming();
  }
  state.counters["all_threads_cpu_s"] = cpu / static_cast<double>(state.iterations());
  std::uint64_t trace_size = fs::file_size(f.path);
  state.SetItemsProcessed(static_cast<std::int64_t>(f.info.events * state.iterations()));
  state.SetBytesProcessed(static_cast<std::int64_t>(trace_size * state.iterations()));
  std::uint64_t index_size = f.trace->index_status().size_bytes;
  state.counters["index_bytes"] = static_cast<double>(index_size);
  state.counters["trace_bytes"] = static_cast<double>(trace_size);
  state.counters["index_pct"] = 100.0 * static_cast<double>(index_size) / trace_size;
  state.counters["parts"] = f.trace->index_status().build_parts;
}
BENCHMARK(BM_IndexBuild)
    ->ArgName("parts")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

// Seek to a random position and read every register of its thread.
void BM_SeekAllRegisters(benchmark::State& state) {
  auto trace = OpenIndexed();
  auto cursor = std::move(trace->NewCursor().value());
  std::mt19937_64 rng(1);
  std::vector<double> us, cpu;
  std::vector<std::uint8_t> buf(64);
  std::uint64_t sink = 0;
  for (auto _ : state) {
    Position p(rng() % (trace->event_count() + 1));
    const double cpu_start = ThreadCpuMicros();
    auto start = Clock::now();
    (void)cursor->Seek(p);
    auto regs = cursor->Registers(cursor->current_thread());
    const RegisterFile& file = **regs;
    for (std::size_t id = 0; id < file.arch().register_count(); ++id) {
      buf.resize(file.arch().info(static_cast<RegisterId>(id)).size);
      sink += file.Read(static_cast<RegisterId>(id), buf);
    }
    us.push_back(Micros(Clock::now() - start));
    cpu.push_back(ThreadCpuMicros() - cpu_start);
  }
  benchmark::DoNotOptimize(sink);
  ReportPercentiles(state, us);
  ReportCpuPercentiles(state, cpu);
}
BENCHMARK(BM_SeekAllRegisters)->Unit(benchmark::kMicrosecond)->Iterations(3000);

// Read 4 KiB of virtual memory (page walk included) at a random position.
void BM_ReadMemory4K(benchmark::State& state) {
  auto trace = OpenIndexed();
  Fixture& f = GetFixture();
  auto cursor = std::move(trace->NewCursor().value());
  std::mt19937_64 rng(2);
  std::vector<double> us, cpu, faults, sys;
  std::vector<std::uint8_t> out(4096), known(4096);
  std::vector<Address> pages;
  for (const auto& page : f.info.pages) pages.push_back(page.virtual_address);
  for (auto _ : state) {
    state.PauseTiming();
    (void)cursor->Seek(Position(rng() % (trace->event_count() + 1)));
    Address a = pages[rng() % pages.size()];
    state.ResumeTiming();
    rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    const double cpu_start = ThreadCpuMicros();
    auto start = Clock::now();
    (void)cursor->ReadMemory(a, out, known);
    us.push_back(Micros(Clock::now() - start));
    cpu.push_back(ThreadCpuMicros() - cpu_start);
    getrusage(RUSAGE_THREAD, &r1);
    faults.push_back(double(r1.ru_minflt - r0.ru_minflt + r1.ru_majflt - r0.ru_majflt));
    sys.push_back(double(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e6 +
                  double(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec));
  }
  ReportPercentiles(state, us);
  ReportCpuPercentiles(state, cpu);
  double fsum = 0, ssum = 0;
  for (double x : faults) fsum += x;
  for (double x : sys) ssum += x;
  state.counters["faults_per_read"] = fsum / faults.size();
  state.counters["sys_us_per_read"] = ssum / sys.size();
}
BENCHMARK(BM_ReadMemory4K)->Unit(benchmark::kMicrosecond)->Iterations(3000);

void RunSearch(benchmark::State& state, const StopCondition& cond, Direction dir) {
  auto trace = OpenIndexed();
  Position from = dir == Direction::kForward ? Position(0) : Position(trace->event_count());
  std::vector<double> us;
  Position hit;
  for (auto _ : state) {
    auto start = Clock::now();
    auto stop = RunUntil(*trace, from, dir, cond);
    us.push_back(Micros(Clock::now() - start));
    if (!stop.ok()) {
      state.SkipWithError(stop.status().ToString().c_str());
      return;
    }
    hit = stop->position;
  }
  state.counters["hit_position"] = static_cast<double>(hit.value);
  ReportPercentiles(state, us);
}

// Continue (forward from 0, backward from the end) to a pc executed once, far away.
void BM_ContinueToFarBreakpoint(benchmark::State& state) {
  StopCondition cond;
  cond.breakpoints = {GetFixture().info.far_pc};
  RunSearch(state, cond, state.range(0) ? Direction::kBackward : Direction::kForward);
}
BENCHMARK(BM_ContinueToFarBreakpoint)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);

// Continue to the only write of a heap range, far away, with a write watchpoint.
void BM_ContinueToFarWatchpoint(benchmark::State& state) {
  StopCondition cond;
  Watch w;
  w.address = GetFixture().info.once_address;
  w.length = GetFixture().info.once_size;
  cond.watches = {w};
  RunSearch(state, cond, state.range(0) ? Direction::kBackward : Direction::kForward);
}
BENCHMARK(BM_ContinueToFarWatchpoint)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(200);

// A "Name:   123 kB" line of /proc/self/status, in MiB (0 if absent).
double StatusMib(const std::string& name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) == 0)
      return std::strtod(line.c_str() + name.size() + 1, nullptr) / 1024;
  }
  return 0;
}

// Peak resident memory of the whole run (build + serving queries), in MiB,
// and what is resident now: anonymous memory (the process's own) and mapped
// file pages (trace and index pages the queries touched, which the kernel
// may drop at any time: they stay in the page cache).
void BM_PeakRss(benchmark::State& state) {
  for (auto _ : state) {
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_mib"] = ru.ru_maxrss / 1024.0;
  state.counters["rss_anon_mib"] = StatusMib("RssAnon");
  state.counters["rss_file_mib"] = StatusMib("RssFile");
}
BENCHMARK(BM_PeakRss)->Iterations(1);

}  // namespace
}  // namespace backstep::core

BENCHMARK_MAIN();
