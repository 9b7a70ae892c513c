// RevenTraceWriter (`backstep convert --to reven`): a random physical
// FakeTrace converted to REVEN must replay to the same states.
#include "formats/reven/reven_trace_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "backstep/core/format_registry.h"
#include "backstep/testing/fake_trace.h"
#include "backstep/testing/fake_trace_generator.h"
#include "backstep/testing/reven_fixtures.h"
#include "formats/reven/reven_reader.h"

namespace backstep::core {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("reven_tw_" + std::to_string(getpid()) + "_" + name))
      .string();
}

struct Converted {
  std::unique_ptr<TraceReader> source;
  Status status;
};

// Converts `trace` to REVEN at `path` through the registry's writer.
Status Convert(const testing::FakeTrace& trace, const std::string& path) {
  auto source = testing::OpenFakeTrace(testing::FakeTraceSource(trace));
  if (!source.ok()) return source.status();
  TraceReader& in = **source;
  const FormatInfo* reven = FindFormat("reven");
  if (reven == nullptr || !reven->create_writer) return Status::NotFound("no reven writer");
  BACKSTEP_ASSIGN_OR_RETURN(auto writer, reven->create_writer(path));
  return ConvertTrace(in, *writer, path).status();
}

TEST(RevenTraceWriterTest, ConvertedFakeTraceReplaysToTheSameStates) {
  testing::FakeTraceOptions o;
  o.seed = 11;
  o.events = 3000;
  o.address_kind = AddressKind::kPhysical;
  testing::FakeTrace fake = testing::GenerateFakeTrace(o);
  // Every register known at position 0 (the generator leaves vector upper
  // halves unknown; REVEN holds zmmN whole: see UnknownRegistersStayUnknown).
  const std::uint8_t zeros[64] = {};
  for (auto& [tid, regs] : fake.initial_registers) {
    for (RegisterId id = 0; id < X86_64().register_count(); ++id) {
      if (!X86_64().info(id).derived && !regs.known(id)) {
        regs.Set(id, std::span<const std::uint8_t>(zeros, X86_64().info(id).size));
      }
    }
  }
  const std::string path = TempPath("convert.bin");
  const Status converted = Convert(fake, path);
  ASSERT_TRUE(converted.ok()) << converted.ToString();
  auto reven = OpenTraceFile(path);
  ASSERT_TRUE(reven.ok()) << reven.status().ToString();
  auto source = testing::OpenFakeTrace(testing::FakeTraceSource(fake));
  ASSERT_TRUE(source.ok());
  TraceReader& a = **source;
  TraceReader& b = **reven;
  EXPECT_EQ(b.header().declared_events, 3000u);
  ASSERT_EQ(b.header().regions.size(), a.header().regions.size());
  for (const MemoryRegion& r : a.header().regions) {
    std::vector<std::uint8_t> ma(r.size), ka(r.size), mb(r.size), kb(r.size);
    a.ReadInitialMemory(r.start, ma, ka);
    b.ReadInitialMemory(r.start, mb, kb);
    for (std::size_t i = 0; i < ma.size(); ++i) {
      if (ka[i]) {
        ASSERT_EQ(ma[i], mb[i]) << "initial byte " << r.start + i;
      }
    }
  }
  RegisterFile ra = a.InitialRegisters()[0].second;
  RegisterFile rb = b.InitialRegisters()[0].second;
  Event ea, eb;
  std::uint64_t ops_kept = 0;
  for (std::uint64_t n = 0;; ++n) {
    auto ma = a.Next(&ea);
    auto mb = b.Next(&eb);
    ASSERT_TRUE(ma.ok() && mb.ok());
    ASSERT_EQ(*ma, *mb) << "event " << n;
    if (!*ma) break;
    EXPECT_EQ(ea.kind == EventKind::kInstruction, eb.kind == EventKind::kInstruction);
    EXPECT_EQ(ea.description, eb.description);
    ASSERT_EQ(ea.writes.size(), eb.writes.size());
    for (std::size_t i = 0; i < ea.writes.size(); ++i) {
      EXPECT_EQ(ea.writes[i].address, eb.writes[i].address);
      EXPECT_TRUE(std::equal(ea.writes[i].data.begin(), ea.writes[i].data.end(),
                             eb.writes[i].data.begin(), eb.writes[i].data.end()));
    }
    for (const RegisterWrite& w : ea.registers) ra.Apply(w);
    for (const RegisterWrite& w : eb.registers) {
      rb.Apply(w);
      ops_kept += w.op != RegisterOp::kSet;
    }
    for (std::size_t i = 0; i < X86_64().register_count(); ++i) {
      const auto id = static_cast<RegisterId>(i);
      if (!ra.known(id)) continue;
      ASSERT_TRUE(std::equal(ra.bytes(id).begin(), ra.bytes(id).end(), rb.bytes(id).begin()))
          << "event " << n << " register " << X86_64().info(id).name;
    }
  }
  EXPECT_GT(ops_kept, 0u);  // eflags single-bit changes became operations
  std::filesystem::remove(path);
}

TEST(RevenTraceWriterTest, RefusesWhatRevenCannotHold) {
  testing::FakeTraceOptions o;
  o.events = 10;
  const std::string path = TempPath("refused.bin");
  Status virt = Convert(testing::GenerateFakeTrace(o), path);
  EXPECT_TRUE(virt.IsUnsupported());
  EXPECT_EQ(virt.message(), path +
                                ": REVEN traces hold physical memory, reached through the "
                                "page tables a trace holds; a virtual-memory trace has none");
  o.address_kind = AddressKind::kPhysical;
  o.threads = 2;
  Status threads = Convert(testing::GenerateFakeTrace(o), path);
  EXPECT_TRUE(threads.IsUnsupported()) << threads.ToString();
  EXPECT_FALSE(std::filesystem::exists(path));
}

// REVEN gives every register it declares an initial value: a register
// unknown at position 0 is not declared, so it reads back unknown (it used
// to be written as 0 and read back as a known 0), and an event setting one
// is refused in one line.
TEST(RevenTraceWriterTest, UnknownRegistersStayUnknown) {
  const std::string path = TempPath("unknown.bin");
  TraceHeader header;
  header.arch = &X86_64();
  header.address_kind = AddressKind::kPhysical;
  const RegisterId rip = X86_64().pc(), rax = *X86_64().Find("rax"), rbx = *X86_64().Find("rbx");
  RegisterFile regs(X86_64());
  regs.SetU64(rip, 0x1000);
  regs.SetU64(rax, 7);
  Event e;
  e.thread = ThreadId(1);
  RegisterWrite step;
  step.reg = rip;
  step.value[0] = 0x02;
  step.value[1] = 0x10;
  e.registers.push_back(step);
  {
    RevenTraceWriter w(path);
    ASSERT_TRUE(w.Begin(header, {{ThreadId(1), regs}}, {}).ok());
    ASSERT_TRUE(w.Append(e).ok());
    ASSERT_TRUE(w.Finish().ok());
  }
  auto reven = OpenTraceFile(path);
  ASSERT_TRUE(reven.ok()) << reven.status().ToString();
  const RegisterFile back = (*reven)->InitialRegisters().at(0).second;
  EXPECT_EQ(back, regs);
  EXPECT_FALSE(back.known(rbx));
  std::filesystem::remove(path);

  RevenTraceWriter refused(path);
  ASSERT_TRUE(refused.Begin(header, {{ThreadId(1), regs}}, {}).ok());
  e.registers[0].reg = rbx;
  const Status s = refused.Append(e);
  EXPECT_EQ(s.message(), path +
                             ": event 0: it sets rbx, unknown at position 0, and a REVEN trace "
                             "gives every register it holds an initial value");
}

}  // namespace
}  // namespace backstep::core
