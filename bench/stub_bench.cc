// Benchmarks of the GDB stub over loopback TCP (docs/architecture.md: "`bs` + `g` + `m`
// round trip over loopback: under 100 µs").
//
// An in-process Server serves a generated REVEN trace; a raw-socket client
// does what gdb does for every instruction of a `reverse-next`: `bs`, then
// `g`, then a 64-byte `m` at the stack pointer read from the `g` reply.
//   BM_StubReverseStepSpread      at positions spread through the trace (each
//                                 sample first jumps there, untimed)
//   BM_StubReverseStepSequential  consecutive reverse steps from the end
//   BM_StubReverseStepGdb         consecutive reverse steps as gdb 13 does
//                                 them now: `bs`, then the `m` at the stack
//                                 pointer the stop reply expedites (no `g`)
//   BM_StubTfind/N                what gdb sends for `tfind N` (QTFrame:N,
//                                 `g`, qXfer:traceframe-info), alternately
//                                 at frames N and N + 1, in a gdb-written
//                                 tfile stretched to 10^6 + 2 frames
//                                 (WriteStretchedTfile: shared/samples/
//                                 gdb_tfile/stepping_amd64.tf, 816-byte R
//                                 blocks; ~0.85 GB, written once)
// Environment: BACKSTEP_BENCH_EVENTS (default 10^7), BACKSTEP_BENCH_DIR
// (default /tmp/backstep-bench), as core_bench.cc. Reports p50/p99 in µs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "backstep/core/trace.h"
#include "backstep/gdbstub/server.h"
#include "backstep/gdbstub/trace_target.h"
#include "backstep/testing/reven_generator.h"
#include "backstep/testing/tfile_fixtures.h"
#include "benchmark/benchmark.h"

namespace backstep::gdbstub {
namespace {

using Clock = std::chrono::steady_clock;

std::filesystem::path BenchDir() {
  namespace fs = std::filesystem;
  fs::path dir =
      std::getenv("BACKSTEP_BENCH_DIR") ? std::getenv("BACKSTEP_BENCH_DIR") : "/tmp/backstep-bench";
  fs::create_directories(dir);
  return dir;
}

std::shared_ptr<core::Trace> OpenOrDie(const std::string& path) {
  auto opened = core::Trace::Open(path);
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    std::abort();
  }
  return *opened;
}

std::shared_ptr<core::Trace> StubTrace() {
  static std::shared_ptr<core::Trace> trace = [] {
    namespace fs = std::filesystem;
    const fs::path dir = BenchDir();
    core::testing::RevenGenOptions opts;
    const char* events = std::getenv("BACKSTEP_BENCH_EVENTS");
    opts.events = events ? std::strtoull(events, nullptr, 0) : 10'000'000;
    opts.seed = 43;
    std::string path = (dir / ("stub-trace-" + std::to_string(opts.events) + ".bin")).string();
    if (!fs::exists(path)) {
      auto info = core::testing::GenerateRevenTrace(path, opts);
      if (!info.ok()) std::abort();
    }
    return OpenOrDie(path);
  }();
  return trace;
}

constexpr std::uint64_t kTfindFrames = 1'000'002;

std::shared_ptr<core::Trace> TfindTrace() {
  static std::shared_ptr<core::Trace> trace = [] {
    const std::string path = (BenchDir() / "tfind-1000002.tf").string();
    if (!std::filesystem::exists(path)) {
      const std::string sample = core::testing::SamplesDir() + "/gdb_tfile/stepping_amd64.tf";
      core::Status s = core::testing::WriteStretchedTfile(sample, path, kTfindFrames, 816);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        std::abort();
      }
    }
    return OpenOrDie(path);
  }();
  return trace;
}

std::string Frame(const std::string& payload) {
  unsigned sum = 0;
  for (unsigned char c : payload) sum += c;
  char tail[8];
  std::snprintf(tail, sizeof tail, "#%02x", sum & 0xff);
  return "$" + payload + tail;
}

// A blocking no-ack client, as lean as gdb's side of the wire.
class Client {
 public:
  explicit Client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) std::abort();
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Ask("QStartNoAckMode");
  }
  ~Client() { ::close(fd_); }
  // Sends a packet, returns the payload of the reply (skipping O packets).
  const std::string& Ask(const std::string& payload) {
    std::string framed = Frame(payload);
    if (::write(fd_, framed.data(), framed.size()) != static_cast<ssize_t>(framed.size())) {
      std::abort();
    }
    while (true) {
      ReadPacket();
      if (reply_.empty() || reply_[0] != 'O' || reply_ == "OK") return reply_;
    }
  }

 private:
  void ReadPacket() {
    while (true) {
      std::size_t start = buffer_.find('$');
      std::size_t hash = start == std::string::npos ? start : buffer_.find('#', start);
      if (hash != std::string::npos && hash + 2 < buffer_.size()) {
        reply_.assign(buffer_, start + 1, hash - start - 1);
        buffer_.erase(0, hash + 3);
        return;
      }
      char chunk[65536];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n <= 0) std::abort();
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  int fd_ = -1;
  std::string buffer_, reply_;
};

struct StubFixture {
  std::unique_ptr<Server> server;
  std::thread thread;
  std::uint16_t port = 0;
  explicit StubFixture(std::shared_ptr<const core::Trace> trace = StubTrace()) {
    server = std::move(Server::Create([trace] { return NewTraceTarget(trace); }).value());
    port = server->ListenTcp("127.0.0.1", 0).value();
    thread = std::thread([this] { server->Run(); });
  }
  ~StubFixture() {
    server->Stop();
    thread.join();
  }
};

std::string HexText(const std::string& text) {
  std::string out;
  char buf[4];
  for (unsigned char c : text) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

// rsp from a `g` reply (regnum 7, bytes 56..63, little-endian hex).
std::uint64_t RspOf(const std::string& g) {
  std::uint64_t rsp = 0;
  for (int i = 7; i >= 0; --i) rsp = rsp << 8 | std::stoul(g.substr(112 + 2 * i, 2), nullptr, 16);
  return rsp;
}

double RoundTrip(Client& client) {
  auto start = Clock::now();
  client.Ask("bs");
  std::uint64_t rsp = RspOf(client.Ask("g"));
  char m[48];
  std::snprintf(m, sizeof m, "m%llx,40", static_cast<unsigned long long>(rsp));
  benchmark::DoNotOptimize(client.Ask(m).size());
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// rsp from a stop reply's expedited registers (`07:<16 hex digits>;`).
std::uint64_t ExpeditedRsp(const std::string& stop) {
  const std::size_t at = stop.find(";07:");
  if (at == std::string::npos) std::abort();
  std::uint64_t rsp = 0;
  for (int i = 7; i >= 0; --i) {
    rsp = rsp << 8 | std::stoul(stop.substr(at + 4 + 2 * i, 2), nullptr, 16);
  }
  return rsp;
}

double GdbRoundTrip(Client& client) {
  auto start = Clock::now();
  std::uint64_t rsp = ExpeditedRsp(client.Ask("bs"));
  char m[48];
  std::snprintf(m, sizeof m, "m%llx,40", static_cast<unsigned long long>(rsp));
  benchmark::DoNotOptimize(client.Ask(m).size());
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

void Report(benchmark::State& state, std::vector<double>& us) {
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  state.counters["max_us"] = us.back();
}

void BM_StubReverseStepSpread(benchmark::State& state) {
  StubFixture fixture;
  Client client(fixture.port);
  const std::uint64_t events = StubTrace()->event_count();
  const std::uint64_t samples = static_cast<std::uint64_t>(state.max_iterations);
  std::vector<double> us;
  std::uint64_t i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::uint64_t p = 1 + (events - 1) * (i++ % samples) / samples;
    client.Ask("qRcmd," + HexText("goto " + std::to_string(p)));
    client.Ask("s");  // performs the armed goto
    state.ResumeTiming();
    us.push_back(RoundTrip(client));
  }
  Report(state, us);
}
BENCHMARK(BM_StubReverseStepSpread)->Unit(benchmark::kMicrosecond)->Iterations(2000);

void BM_StubReverseStepSequential(benchmark::State& state) {
  StubFixture fixture;
  Client client(fixture.port);
  client.Ask("qRcmd," + HexText("goto end"));
  client.Ask("s");
  std::vector<double> us;
  for (auto _ : state) us.push_back(RoundTrip(client));
  Report(state, us);
}
BENCHMARK(BM_StubReverseStepSequential)->Unit(benchmark::kMicrosecond)->Iterations(5000);

void BM_StubReverseStepGdb(benchmark::State& state) {
  StubFixture fixture;
  Client client(fixture.port);
  client.Ask("qRcmd," + HexText("goto end"));
  client.Ask("s");
  std::vector<double> us;
  for (auto _ : state) us.push_back(GdbRoundTrip(client));
  Report(state, us);
}
BENCHMARK(BM_StubReverseStepGdb)->Unit(benchmark::kMicrosecond)->Iterations(5000);

void BM_StubTfind(benchmark::State& state) {
  StubFixture fixture(TfindTrace());
  Client client(fixture.port);
  const auto frame = static_cast<std::uint64_t>(state.range(0));
  std::vector<double> us;
  std::uint64_t i = 0;
  for (auto _ : state) {
    char packet[32];
    std::snprintf(packet, sizeof packet, "QTFrame:%llx",
                  static_cast<unsigned long long>(frame + i++ % 2));
    auto start = Clock::now();
    if (client.Ask(packet)[0] != 'F') std::abort();
    benchmark::DoNotOptimize(client.Ask("g").size());
    benchmark::DoNotOptimize(client.Ask("qXfer:traceframe-info:read::0,1000").size());
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  Report(state, us);
}
BENCHMARK(BM_StubTfind)
    ->Arg(0)
    ->Arg(10'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(2000);

}  // namespace
}  // namespace backstep::gdbstub
