// A naive replay of BAP frames by bap-frames' definitions (stdframe.piqi:
// pre-list values are before the instruction, post-list values after;
// frame_events.ml), computed from the frames alone, against the cursor at
// every position, for every thread: random multi-thread traces in the
// legacy tracer's style (upper-case names, only touched registers, no pc
// operand) and the TCG plugin's (every register and rip in the pre-list,
// changed ones and rip in the post-list), threads switching every few
// frames.
//
// The rules: thread T at position p, with n = T's first frame at or after
// p: its frames before n (pre then post lists), then n's pre-list, and
// pc = n's address. When T has no frame left: only its last frame's pre
// and post lists (nothing else is known after it).
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <random>

#include "backstep/core/cursor.h"
#include "backstep/core/trace.h"
#include "formats/bap/bap_reader.h"
#include "testing/bap_fixtures.h"

namespace backstep::core {
namespace {

namespace t = testing;

struct Frame {
  std::uint64_t thread, address;
  std::vector<std::pair<std::string, std::uint64_t>> pre, post;
};

RegisterId IdOf(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return *X86_64().Find(name);
}

void Apply(RegisterFile& f, const std::vector<std::pair<std::string, std::uint64_t>>& list) {
  for (const auto& [name, value] : list) f.SetU64(IdOf(name), value);
}

std::vector<Frame> Generate(bool plugin, std::uint64_t seed) {
  const char* gprs[] = {"RAX", "RBX", "RCX", "RDX", "RSI", "RDI", "RBP", "RSP", "R8", "R15"};
  auto name = [&](int i) {
    std::string n = gprs[i];
    if (plugin) {
      for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return n;
  };
  std::mt19937_64 rng(seed);
  std::vector<Frame> frames;
  std::map<std::uint64_t, std::vector<std::uint64_t>> regs;  // the truth per thread
  std::map<std::uint64_t, std::uint64_t> pc;
  std::uint64_t thread = 0;
  for (int k = 0; k < 300; ++k) {
    if (rng() % 4 == 0) thread = rng() % 3;
    auto& r = regs.try_emplace(thread, std::vector<std::uint64_t>(10)).first->second;
    if (!pc.count(thread)) {
      pc[thread] = 0x400000 + 0x10000 * thread;
      for (auto& v : r) v = rng();
    }
    Frame f{thread, pc[thread], {}, {}};
    const std::uint64_t next = pc[thread] + 1 + rng() % 8;
    for (int i = 0; i < 10; ++i) {
      if (plugin || rng() % 4 == 0) f.pre.emplace_back(name(i), r[i]);
    }
    if (plugin) f.pre.emplace_back("rip", pc[thread]);
    for (int i = 0; i < 10; ++i) {
      if (rng() % 5 == 0) {
        r[i] = rng();
        f.post.emplace_back(name(i), r[i]);
      }
    }
    if (plugin) f.post.emplace_back("rip", next);
    pc[thread] = next;
    frames.push_back(std::move(f));
  }
  return frames;
}

RegisterFile ExpectedRegisters(const std::vector<Frame>& frames, std::uint64_t thread,
                               std::size_t p) {
  RegisterFile f(X86_64());
  std::optional<std::size_t> next, last;
  for (std::size_t k = 0; k < frames.size(); ++k) {
    if (frames[k].thread != thread) continue;
    if (k < p) last = k;
    if (k >= p && !next) next = k;
  }
  if (!next) {
    if (last) Apply(f, frames[*last].pre), Apply(f, frames[*last].post);
    return f;
  }
  for (std::size_t k = 0; k < *next; ++k) {
    if (frames[k].thread == thread) Apply(f, frames[k].pre), Apply(f, frames[k].post);
  }
  Apply(f, frames[*next].pre);
  f.SetU64(X86_64().pc(), frames[*next].address);
  return f;
}

TEST(BapReplay, EveryPositionMatchesTheFramesDefinition) {
  for (const bool plugin : {false, true}) {
    SCOPED_TRACE(plugin ? "TCG plugin" : "legacy");
    const std::vector<Frame> frames = Generate(plugin, plugin ? 7 : 8);
    std::vector<t::bp::frame> protos;
    for (const Frame& f : frames) {
      std::vector<t::bp::operand_info> pre, post;
      for (const auto& [n, v] : f.pre) pre.push_back(t::BapReg(n, v, 8, !plugin));
      for (const auto& [n, v] : f.post) post.push_back(t::BapReg(n, v, 8, !plugin));
      protos.push_back(t::BapStd(f.thread, f.address, "\x90", pre, post));
    }
    const auto source = MemorySource(t::HandBapFile(protos), "replay.frames");
    ReaderFactory factory = [source]() -> Expected<std::unique_ptr<TraceReader>> {
      BACKSTEP_ASSIGN_OR_RETURN(auto r, BapReader::Open(source));
      return std::unique_ptr<TraceReader>(std::move(r));
    };
    OpenOptions options;
    options.keyframe_interval = 17;
    auto trace = Trace::OpenWith(factory, "", options);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    ASSERT_EQ((*trace)->event_count(), frames.size());
    auto cursor = (*trace)->NewCursor();
    ASSERT_TRUE(cursor.ok());
    for (std::size_t p = 0; p <= frames.size(); ++p) {
      ASSERT_TRUE((*cursor)->Seek(Position(p)).ok());
      for (std::uint64_t thread = 0; thread < 3; ++thread) {
        auto regs = (*cursor)->Registers(ThreadId(thread + 1));
        ASSERT_TRUE(regs.ok());
        ASSERT_TRUE(**regs == ExpectedRegisters(frames, thread, p))
            << "position " << p << " thread " << thread + 1;
      }
    }
  }
}

}  // namespace
}  // namespace backstep::core
