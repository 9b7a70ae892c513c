// Target descriptions and R-block layouts: gdb's sample tdesc, backstep's
// own documents, implicit regnums, and the x87 stack-order conversion.
#include "formats/tfile/tfile_layout.h"

#include <gtest/gtest.h>

#include "backstep/testing/tfile_fixtures.h"
#include "formats/tfile/tfile_definitions.h"
#include "formats/tfile/tfile_format.h"

namespace backstep::core {
namespace {

RegisterId Id(std::string_view name) { return *X86_64().Find(name); }

TEST(TfileTdescTest, GdbSampleMatchesTheTable) {
  const auto file = testing::ReadFileBytes(testing::SamplesDir() + "/gdb_tfile/work_amd64.tf");
  ASSERT_FALSE(file.empty()) << "missing sample (set BACKSTEP_SAMPLES_DIR)";
  TfileDefinitions defs;
  std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
  text.remove_prefix(8);
  for (std::size_t nl; (nl = text.find('\n')) != 0;) {
    std::string warning;
    ASSERT_TRUE(ParseTfileDefinitionLine(text.substr(0, nl), &defs, &warning).ok());
    text.remove_prefix(nl + 1);
  }
  auto tdesc = ParseTdesc(defs.TdescXml());
  ASSERT_TRUE(tdesc.ok()) << tdesc.status().ToString();
  EXPECT_EQ(tdesc->architecture, "i386:x86-64");
  EXPECT_EQ(tdesc->registers.size(), 148u);
  EXPECT_EQ(tdesc->features.size(), 6u);
  auto layout = TfileRegisterLayout::FromTdesc(*tdesc, 0x970);
  ASSERT_TRUE(layout.ok());
  // The same offsets as the table's own layout of those features.
  const auto table = X86_64().GdbLayout(kDefaultX86_64Features | kFeatureAvx512);
  ASSERT_EQ(layout->slots().size(), table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(layout->slots()[i].offset, table[i].offset) << i;
    EXPECT_EQ(layout->slots()[i].regnum, table[i].regnum) << i;
    const bool st = X86_64().info(table[i].reg).derived;
    EXPECT_EQ(layout->slots()[i].reg, table[i].reg);
    EXPECT_EQ(layout->slots()[i].st_index >= 0, st);
  }
  EXPECT_TRUE(layout->unmapped().empty());
  EXPECT_TRUE(layout->notes().empty());
  EXPECT_EQ(layout->description(), "tdesc i386:x86-64: 148 registers, 2416 bytes");
}

TEST(TfileTdescTest, InlineDocumentParsesBack) {
  for (std::uint32_t features :
       {kFeatureCore | kFeatureSse, kDefaultX86_64Features, kAllX86_64Features}) {
    const std::string xml = InlineTargetXml(X86_64(), features);
    EXPECT_EQ(xml.find("xi:include"), std::string::npos);
    std::size_t longest = 0, start = 0;
    for (std::size_t nl; (nl = xml.find('\n', start)) != std::string::npos; start = nl + 1) {
      longest = std::max(longest, nl - start);
    }
    EXPECT_LT(longest + 6, kTfileMaxLineLength);
    auto tdesc = ParseTdesc(xml);
    ASSERT_TRUE(tdesc.ok()) << tdesc.status().ToString();
    auto layout = TfileRegisterLayout::FromTdesc(*tdesc, X86_64().GdbBlockSize(features));
    ASSERT_TRUE(layout.ok());
    const auto table = X86_64().GdbLayout(features);
    ASSERT_EQ(layout->slots().size(), table.size());
    for (std::size_t i = 0; i < table.size(); ++i) {
      EXPECT_EQ(layout->slots()[i].offset, table[i].offset);
    }
  }
}

TEST(TfileTdescTest, ImplicitRegnumsAndOrder) {
  // Regnums: explicit, then one more than the previous; the layout sorts.
  auto tdesc = ParseTdesc(
      "<?xml version=\"1.0\"?><!-- a <comment> --><target>"
      "<reg name='rip' bitsize='64' regnum='16'/><reg name=\"eflags\" bitsize=\"32\"/>"
      "<reg name=\"rax\" bitsize=\"64\" regnum=\"0\"/><reg name=\"rbx\" bitsize=\"64\"/></target>");
  ASSERT_TRUE(tdesc.ok()) << tdesc.status().ToString();
  ASSERT_EQ(tdesc->registers.size(), 4u);
  EXPECT_EQ(tdesc->registers[1].regnum, 17);
  EXPECT_EQ(tdesc->registers[3].regnum, 1);
  auto layout = TfileRegisterLayout::FromTdesc(*tdesc, 28);
  ASSERT_TRUE(layout.ok());
  std::vector<std::string> order;
  for (const auto& s : layout->slots()) order.push_back(s.name + "@" + std::to_string(s.offset));
  EXPECT_EQ(order, (std::vector<std::string>{"rax@0", "rbx@8", "rip@16", "eflags@24"}));
}

TEST(TfileTdescTest, MalformedDocuments) {
  for (const char* bad :
       {"<target><reg name=\"a\" bitsize=\"12\"/>", "<target><reg bitsize=\"8\"/>",
        "<target><reg name=\"a\" bitsize=\"8\" regnum=\"70000\"/>",
        "<target><reg name=a bitsize=\"8\"/>", "<target", "<>",
        "<target><reg name=\"a\" bitsize=\"99999999999\"/>"}) {
    EXPECT_EQ(ParseTdesc(bad).status().code(), StatusCode::kCorruption) << bad;
  }
}

// st(i) in the block is R[(TOP + i) & 7] in the file, both ways.
TEST(TfileLayoutTest, X87StackOrder) {
  const TfileRegisterLayout layout = TfileRegisterLayout::ForFeatures(kFeatureCore | kFeatureSse);
  RegisterFile regs(X86_64());
  regs.SetU64(Id("fstat"), (3u << 11) | 0x41);  // TOP = 3
  for (int i = 0; i < 8; ++i) {
    std::uint8_t v[10] = {static_cast<std::uint8_t>(i)};
    regs.Set(Id("fpr" + std::to_string(i)), v);
  }
  const auto block = layout.Encode(regs);
  ASSERT_EQ(block.size(), 536u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(block[164 + 10 * i], (3 + i) & 7) << "st" << i;
  std::vector<RegisterWrite> writes;
  layout.Decode(block, &writes);
  RegisterFile back(X86_64());
  for (const RegisterWrite& w : writes) back.Apply(w);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(back.bytes(Id("fpr" + std::to_string(i)))[0], i);
  // A block cut before fstat: the st registers stay unknown.
  writes.clear();
  layout.Decode(std::span<const std::uint8_t>(block).first(250), &writes);
  RegisterFile cut(X86_64());
  for (const RegisterWrite& w : writes) cut.Apply(w);
  EXPECT_TRUE(cut.known(Id("rip")));
  EXPECT_TRUE(cut.known(Id("fctrl")));
  EXPECT_FALSE(cut.known(Id("fstat")));
  EXPECT_FALSE(cut.known(Id("fpr0")));
}

TEST(TfileLayoutTest, AssumedLayouts) {
  const std::pair<std::uint64_t, std::uint32_t> sizes[] = {
      {536, kFeatureCore | kFeatureSse},
      {544, kFeatureCore | kFeatureSse | kFeatureLinux},
      {560, kFeatureCore | kFeatureSse | kFeatureLinux | kFeatureSegments},
      {816, kDefaultX86_64Features},
      {2416, kDefaultX86_64Features | kFeatureAvx512},
      {2420, kAllX86_64Features}};
  for (const auto& [size, features] : sizes) {
    const auto layout = TfileRegisterLayout::ForBlockSize(size);
    EXPECT_EQ(layout.block_size(), size);
    EXPECT_EQ(layout.slots().size(), X86_64().GdbLayout(features).size()) << size;
    EXPECT_TRUE(layout.notes().empty()) << size;
    EXPECT_EQ(layout.description().find("matches no known layout"), std::string::npos);
  }
}

}  // namespace
}  // namespace backstep::core
