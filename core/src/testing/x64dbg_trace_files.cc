// The x64dbg fixtures that need no simulated program: a FakeTrace written
// as an x64dbg trace file, and a program's file as bytes
// (backstep/testing/x64dbg_fixtures.h).
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "backstep/core/trace_writer.h"
#include "backstep/testing/x64dbg_fixtures.h"
#include "formats/x64dbg/x64dbg_trace_writer.h"

namespace backstep::core::testing {

Status WriteX64dbgTrace(const FakeTrace& trace, const std::string& path) {
  // Straight into the writer (FakeTrace files are x86-64 only).
  TraceHeader header;
  header.format = "fake";
  header.arch =
      trace.initial_registers.empty() ? &X86_64() : &trace.initial_registers[0].second.arch();
  header.address_kind = trace.address_kind;
  header.records_reads = trace.records_reads;
  auto image = [&trace](Address a, std::span<std::uint8_t> out, std::span<std::uint8_t> known) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = known[i] = 0;
      for (const FakeImageRegion& r : trace.image) {
        if (a + i >= r.start && a + i - r.start < r.bytes.size()) {
          out[i] = r.bytes[a + i - r.start];
          known[i] = r.known[a + i - r.start];
        }
      }
    }
  };
  X64dbgTraceWriter writer(path);
  BACKSTEP_RETURN_IF_ERROR(writer.Begin(header, trace.initial_registers, image));
  Event e;
  for (const FakeEvent& f : trace.events) {
    e.Clear();
    e.thread = f.thread;
    e.kind = f.kind;
    e.flags = f.flags;
    e.description = f.description;
    e.registers = f.registers;
    for (const FakeAccess& r : f.reads) e.reads.push_back({r.address, r.data});
    for (const FakeAccess& w : f.writes) e.writes.push_back({w.address, w.data});
    BACKSTEP_RETURN_IF_ERROR(writer.Append(e));
  }
  return writer.Finish();
}

Expected<std::vector<std::uint8_t>> X64dbgProgramBytes(const X64dbgProgramOptions& options) {
  char name[] = "/tmp/backstep-x64dbg-XXXXXX";
  if (!mkdtemp(name)) return Status::IOError("mkdtemp failed");
  const std::string path = std::string(name) + "/program.trace";
  Status s = WriteX64dbgProgram(options, path);
  std::vector<std::uint8_t> bytes;
  if (s.ok()) {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::filesystem::remove_all(name);
  if (!s.ok()) return s;
  return bytes;
}

}  // namespace backstep::core::testing
