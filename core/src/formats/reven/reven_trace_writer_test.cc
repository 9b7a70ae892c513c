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
  const testing::FakeTrace fake = testing::GenerateFakeTrace(o);
  const std::string path = TempPath("convert.bin");
  ASSERT_TRUE(Convert(fake, path).ok());
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
  EXPECT_EQ(virt.message(),
            path +
                ": REVEN traces hold physical memory; converting a virtual-memory trace is not "
                "supported");
  o.address_kind = AddressKind::kPhysical;
  o.threads = 2;
  Status threads = Convert(testing::GenerateFakeTrace(o), path);
  EXPECT_TRUE(threads.IsUnsupported()) << threads.ToString();
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace backstep::core
