// backstep dump TRACE --at N [--regs] [--mem ADDR LEN]... [--phys] [--thread T]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "backstep/core/cursor.h"
#include "backstep/core/hex.h"
#include "backstep/core/mappings.h"
#include "backstep/core/search.h"
#include "backstep/core/trace.h"
#include "cli/cli.h"
#include "cli/open_trace.h"

namespace backstep::cli {
namespace {

// "0x" + the register's bytes, most significant first (gdb's raw order).
std::string RegisterText(std::span<const std::uint8_t> bytes) {
  const std::vector<std::uint8_t> msb_first(bytes.rbegin(), bytes.rend());
  return "0x" + core::HexBytes(msb_first);
}

// Every register of gdb's set, known or not; system registers (control,
// MSRs, ...) only when known, since most formats never record them.
void PrintRegisters(const core::RegisterFile& regs) {
  const core::ArchDescription& arch = regs.arch();
  std::vector<std::uint8_t> buf;
  std::size_t hidden = 0;
  for (std::size_t id = 0; id < arch.register_count(); ++id) {
    const core::RegisterInfo& info = arch.info(static_cast<core::RegisterId>(id));
    buf.assign(info.size, 0);
    bool known = regs.Read(static_cast<core::RegisterId>(id), buf);
    if (!known && info.gdb_regnum < 0) {
      ++hidden;
      continue;
    }
    std::printf("%-14.*s %s\n", static_cast<int>(info.name.size()), info.name.data(),
                known ? RegisterText(buf).c_str() : "<unknown>");
  }
  if (hidden > 0) std::printf("# %zu system registers unknown, not shown\n", hidden);
}

// Hex dump, 16 bytes a line, "??" for unknown bytes.
void PrintMemory(core::Address address, std::span<const std::uint8_t> bytes,
                 std::span<const std::uint8_t> known) {
  for (std::size_t line = 0; line < bytes.size(); line += 16) {
    std::string text = core::HexPadded(address + line, 16) + ":";
    std::string ascii;
    for (std::size_t i = line; i < line + 16 && i < bytes.size(); ++i) {
      if (known[i]) {
        text += " " + core::HexBytes(bytes.subspan(i, 1));
        ascii += (bytes[i] >= 0x20 && bytes[i] < 0x7f) ? char(bytes[i]) : '.';
      } else {
        text += " ??";
        ascii += ' ';
      }
    }
    text.resize(std::max<std::size_t>(text.size(), 19 + 16 * 3), ' ');
    std::printf("%s  |%s|\n", text.c_str(), ascii.c_str());
  }
}

// In a trace that describes its mappings: a line for each range of
// [address, address + length) that an unmap removed at `position` (its
// bytes print as "??", whatever was written there before).
void PrintUnmapped(const core::Trace& trace, core::Position position, core::Address address,
                   std::uint64_t length) {
  if (!trace.header().describes_mappings || length == 0) return;
  auto state = trace.mappings().StateAt(position);
  if (!state.ok()) return;
  const core::Address last = address + (length - 1);
  for (const core::Mapping& m : (*state)->unmapped) {
    if (m.start > last || m.end() - 1 < address) continue;
    std::printf("# %s-%s: unmapped at this position\n",
                core::HexU64(std::max(m.start, address)).c_str(),
                core::HexU64(std::min(m.end() - 1, last) + 1).c_str());
  }
}

}  // namespace

int RunDump(Args& args) {
  std::optional<std::string> at = args.TakeOption("at");
  bool regs = args.TakeFlag("regs");
  bool phys = args.TakeFlag("phys");
  std::optional<std::string> thread_text = args.TakeOption("thread");
  auto mems = args.TakeOptionN("mem", 2);
  std::optional<std::string> cache_dir = args.TakeOption("cache-dir");
  auto files = args.Positionals();
  if (files.size() != 1) return Usage("dump takes one trace file");
  if (auto problem = args.Problem()) return Usage(*problem);
  if (!at) return Usage("dump needs --at N");
  if (!regs && mems.empty()) regs = true;

  Args open_args(cache_dir ? std::vector<std::string>{"--cache-dir", *cache_dir}
                           : std::vector<std::string>{});
  auto trace = OpenTraceForCli(files[0], open_args);
  if (!trace.ok()) return Fail(trace.status());
  auto position = ParsePosition(*at, **trace);
  if (!position) return Usage("--at takes a position, 'end' or a percentage, not '" + *at + "'");
  if (*position > core::Position((*trace)->event_count())) {
    return Fail(core::Status::OutOfRange(
        files[0] + ": position " + std::to_string(position->value) +
        " is past the end (the trace has " + std::to_string((*trace)->event_count()) + " events)"));
  }
  auto cursor = (*trace)->NewCursor();
  if (!cursor.ok()) return Fail(cursor.status());
  if (auto s = (*cursor)->Seek(*position); !s.ok()) return Fail(s);

  core::ThreadId thread = (*cursor)->current_thread();
  if (thread_text) {
    auto t = ParseNumber(*thread_text);
    if (!t) return Usage("--thread takes a thread id");
    thread = core::ThreadId(*t);
  }
  std::printf("position %llu of %llu, thread %llu\n",
              static_cast<unsigned long long>(position->value),
              static_cast<unsigned long long>((*trace)->event_count()),
              static_cast<unsigned long long>(thread.value));
  if (regs) {
    auto file = (*cursor)->Registers(thread);
    if (!file.ok()) return Fail(file.status());
    PrintRegisters(**file);
  }
  for (const auto& mem : mems) {
    auto address = ParseNumber(mem[0]);
    auto length = ParseNumber(mem[1]);
    const std::uint64_t kMaxDump = 1 << 24;
    if (!address || !length) return Usage("--mem takes ADDR LEN (decimal or 0x hex)");
    if (*length > kMaxDump) return Usage("--mem LEN is limited to 16 MiB");
    if (auto s = core::CheckRange(**trace, *address, *length); !s.ok()) return Fail(s);
    std::vector<std::uint8_t> bytes(*length), known(*length);
    auto kind = phys ? core::AddressKind::kPhysical : core::AddressKind::kVirtual;
    if (auto s = (*cursor)->ReadMemory(*address, bytes, known, kind); !s.ok()) return Fail(s);
    std::printf("memory %s %s, %s bytes:\n", phys ? "physical" : "virtual",
                core::HexU64(*address).c_str(), core::HexU64(*length).c_str());
    PrintMemory(*address, bytes, known);
    if (!phys) PrintUnmapped(**trace, *position, *address, *length);
  }
  return 0;
}

}  // namespace backstep::cli
