// make_x64dbg OUT [--i386] [--instructions N] [--reveal N]: writes the
// hand-made two-thread program (core/testing/include/backstep/testing/x64dbg_fixtures.h) as an
// x64dbg trace with our writer and prints facts the end-to-end tests check,
// one "key value" per line: events, the last event that reads the counter,
// the first position at which thread B's stack slot is written, and the
// first full register dump's position.
#include <cstdio>
#include <optional>
#include <string>

#include "backstep/core/number.h"
#include "backstep/testing/x64dbg_fixtures.h"

namespace t = backstep::core::testing;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_x64dbg OUT [--i386] [--instructions N] [--reveal N]\n");
    return 2;
  }
  t::X64dbgProgramOptions o;
  o.instructions = 2000;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--i386") {
      o.i386 = true;
    } else if ((a == "--instructions" || a == "--reveal") && i + 1 < argc) {
      const std::optional<std::uint64_t> n = backstep::core::ParseNumber(argv[++i]);
      if (!n) {
        std::fprintf(stderr, "make_x64dbg: %s wants a number, not %s\n", a.c_str(), argv[i]);
        return 2;
      }
      (a == "--instructions" ? o.instructions : o.reveal_at) = *n;
    } else {
      std::fprintf(stderr, "make_x64dbg: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  const t::FakeTrace trace = t::MakeX64dbgProgram(o);
  backstep::core::Status s = t::WriteX64dbgTrace(trace, argv[1]);
  if (!s.ok()) {
    std::fprintf(stderr, "make_x64dbg: %s\n", s.ToString().c_str());
    return 1;
  }
  long long last_read = -1, b_write = -1, full = -1, instructions = 0;
  for (std::size_t e = 0; e < trace.events.size(); ++e) {
    const t::FakeEvent& ev = trace.events[e];
    for (const auto& r : ev.reads) {
      if (r.address == t::kX64dbgCounter) last_read = static_cast<long long>(e);
    }
    for (const auto& w : ev.writes) {
      if (w.address == t::kX64dbgStackB && b_write < 0) b_write = static_cast<long long>(e);
    }
    if (ev.kind == backstep::core::EventKind::kInstruction) {
      if (instructions == static_cast<long long>(o.reveal_at) && full < 0) {
        // The block at the reveal point (positions are blocks).
        full = static_cast<long long>(e);
      }
      ++instructions;
    }
  }
  std::printf("events %zu\nlast_counter_read %lld\nfirst_b_stack_write %lld\nfull_dump %lld\n",
              trace.events.size(), last_read, b_write, full);
  // A position late in the trace whose thread has known registers (the
  // event before it is an instruction of the same thread), and the last
  // counter read before it: where rwatch stops in reverse.
  long long reverse_from = -1, read_before = -1;
  for (std::size_t e = trace.events.size() - 1; e > 0; --e) {
    const t::FakeEvent& ev = trace.events[e];
    const t::FakeEvent& prev = trace.events[e - 1];
    if (ev.kind == backstep::core::EventKind::kInstruction &&
        prev.kind == backstep::core::EventKind::kInstruction && prev.thread == ev.thread &&
        !(prev.flags & backstep::core::kEventClearsRegisters)) {
      reverse_from = static_cast<long long>(e);
      break;
    }
  }
  for (long long e = 0; e < reverse_from; ++e) {
    for (const auto& r : trace.events[e].reads) {
      if (r.address == t::kX64dbgCounter) read_before = e;
    }
  }
  std::printf("reverse_from %lld\nread_before %lld\n", reverse_from, read_before);
  std::printf("thread_a %llu\nthread_b %llu\n", (unsigned long long)t::kX64dbgThreadA,
              (unsigned long long)t::kX64dbgThreadB);
  return 0;
}
