#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "backstep/core/arch.h"

namespace backstep::core {
namespace {

std::uint32_t Offset(const std::vector<GdbSlot>& layout, std::string_view name) {
  for (const GdbSlot& s : layout) {
    if (X86_64().info(s.reg).name == name) return s.offset;
  }
  ADD_FAILURE() << name << " not in layout";
  return 0;
}

TEST(GdbLayoutTest, OffsetsMatchGdb) {
  const auto layout = X86_64().GdbLayout(kAllX86_64Features);
  ASSERT_EQ(layout.size(), 149u);
  for (std::size_t i = 0; i < layout.size(); ++i) {
    EXPECT_EQ(layout[i].regnum, static_cast<int>(i));
    EXPECT_EQ(layout[i].reg, i);
  }
  const std::pair<const char*, std::uint32_t> rows[] = {
      {"rax", 0},        {"rip", 128},     {"eflags", 136}, {"cs", 140},
      {"st0", 164},      {"fctrl", 244},   {"xmm0", 276},   {"mxcsr", 532},
      {"orig_rax", 536}, {"fs_base", 544}, {"ymm0h", 560},  {"xmm16", 816},
      {"ymm16h", 1072},  {"k0", 1328},     {"zmm0h", 1392}, {"pkru", 2416},
  };
  for (const auto& [name, offset] : rows) EXPECT_EQ(Offset(layout, name), offset) << name;
}

TEST(GdbLayoutTest, BlockSizes) {
  const ArchDescription& a = X86_64();
  EXPECT_EQ(a.GdbBlockSize(kAllX86_64Features & ~kFeaturePkeys), 0x970u);
  EXPECT_EQ(a.GdbBlockSize(kAllX86_64Features), 0x970u + 4);
  EXPECT_EQ(a.GdbBlockSize(kFeatureCore | kFeatureSse), 536u);
  EXPECT_EQ(a.GdbBlockSize(kFeatureCore | kFeatureSse | kFeatureLinux), 544u);
  EXPECT_EQ(a.GdbBlockSize(kFeatureCore | kFeatureSse | kFeatureLinux | kFeatureSegments), 560u);
  EXPECT_EQ(a.GdbBlockSize(kDefaultX86_64Features), 816u);
  // Skipped features shift later registers.
  const auto layout = a.GdbLayout(kFeatureCore | kFeatureSse | kFeatureAvx);
  EXPECT_EQ(Offset(layout, "ymm0h"), 536u);
  EXPECT_EQ(layout.back().offset + layout.back().size,
            a.GdbBlockSize(kFeatureCore | kFeatureSse | kFeatureAvx));
}

// One parsed <reg/> element.
struct XmlReg {
  std::string name, type, group;
  int bitsize = 0, regnum = -1;
};

std::vector<XmlReg> ParseRegs(const std::string& xml) {
  std::vector<XmlReg> regs;
  static const std::regex kReg(R"(<reg ([^>]*)/>)");
  static const std::regex kAttr(R"(([a-z]+)="([^"]*)\")");
  for (std::sregex_iterator it(xml.begin(), xml.end(), kReg), end; it != end; ++it) {
    XmlReg r;
    const std::string attrs = (*it)[1];
    for (std::sregex_iterator a(attrs.begin(), attrs.end(), kAttr); a != end; ++a) {
      const std::string key = (*a)[1], value = (*a)[2];
      if (key == "name") r.name = value;
      if (key == "type") r.type = value;
      if (key == "group") r.group = value;
      if (key == "bitsize") r.bitsize = std::stoi(value);
      if (key == "regnum") r.regnum = std::stoi(value);
    }
    regs.push_back(r);
  }
  return regs;
}

TEST(TargetXmlTest, TargetIsOnlyIncludes) {
  const auto docs = X86_64().TargetXml(kDefaultX86_64Features);
  ASSERT_EQ(docs.size(), 6u);
  EXPECT_EQ(docs[0].first, "target.xml");
  const std::string& target = docs[0].second;
  EXPECT_NE(target.find("<architecture>i386:x86-64</architecture>"), std::string::npos);
  EXPECT_NE(target.find("<osabi>GNU/Linux</osabi>"), std::string::npos);
  EXPECT_EQ(target.find("<feature"), std::string::npos);
  EXPECT_EQ(target.find("<reg"), std::string::npos);
  const char* files[] = {"64bit-core.xml", "64bit-sse.xml", "64bit-linux.xml", "64bit-segments.xml",
                         "64bit-avx.xml"};
  std::size_t pos = 0;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(docs[i + 1].first, files[i]);
    const std::string include = std::string("<xi:include href=\"") + files[i] + "\"/>";
    const std::size_t at = target.find(include);
    ASSERT_NE(at, std::string::npos) << include;
    EXPECT_GT(at, pos);  // in feature order
    pos = at;
  }
  EXPECT_EQ(target.find("avx512"), std::string::npos);
}

TEST(TargetXmlTest, EveryRegisterOnceWithConsecutiveRegnums) {
  for (std::uint32_t features :
       {kFeatureCore | kFeatureSse, kDefaultX86_64Features, kAllX86_64Features}) {
    const auto docs = X86_64().TargetXml(features);
    const auto layout = X86_64().GdbLayout(features);
    std::vector<XmlReg> regs;
    for (std::size_t i = 1; i < docs.size(); ++i) {
      const std::string& xml = docs[i].second;
      EXPECT_EQ(xml.rfind("<?xml version=\"1.0\"?>", 0), 0u);
      EXPECT_NE(xml.find("</feature>"), std::string::npos);
      for (XmlReg& r : ParseRegs(xml)) regs.push_back(std::move(r));
    }
    ASSERT_EQ(regs.size(), layout.size());
    for (std::size_t i = 0; i < regs.size(); ++i) {
      const RegisterInfo& info = X86_64().info(layout[i].reg);
      EXPECT_EQ(regs[i].name, info.name);
      EXPECT_EQ(regs[i].regnum, static_cast<int>(i));
      EXPECT_EQ(regs[i].bitsize, 8 * info.size);
      EXPECT_EQ(regs[i].type, info.gdb_type);
      EXPECT_EQ(regs[i].group, info.group);
    }
  }
}

TEST(TargetXmlTest, DefinesTheTypesItUses) {
  const auto docs = X86_64().TargetXml(kAllX86_64Features);
  EXPECT_NE(docs[1].second.find("<flags id=\"i386_eflags\" size=\"4\">"), std::string::npos);
  EXPECT_NE(docs[2].second.find("<union id=\"vec128\">"), std::string::npos);
  EXPECT_NE(docs[2].second.find("<flags id=\"i386_mxcsr\" size=\"4\">"), std::string::npos);
  EXPECT_NE(docs[6].second.find("<vector id=\"v2ui128\" type=\"uint128\" count=\"2\"/>"),
            std::string::npos);
  EXPECT_NE(docs[1].second.find("<feature name=\"org.gnu.gdb.i386.core\">"), std::string::npos);
  EXPECT_NE(docs[7].second.find("<feature name=\"org.gnu.gdb.i386.pkeys\">"), std::string::npos);
}

// Runs `command`, returns its stdout and stderr.
std::string RunCommand(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Loads the description into real gdb and compares its remote register
// numbers, `g` offsets and sizes with GdbLayout().
TEST(TargetXmlTest, RealGdbAgrees) {
  if (RunCommand("command -v gdb").empty())
    GTEST_SKIP() << "gdb is not on PATH; cannot check target.xml";
  for (std::uint32_t features : {kFeatureCore | kFeatureSse, kDefaultX86_64Features,
                                 kAllX86_64Features & ~kFeaturePkeys, kAllX86_64Features}) {
    SCOPED_TRACE(features);
    char dir_template[] = "/tmp/backstep_tdesc_XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    const std::string dir = dir_template;
    for (const auto& [annex, xml] : X86_64().TargetXml(features)) {
      std::ofstream(dir + "/" + annex) << xml;
    }
    const std::string out = RunCommand("gdb -nx -batch -ex 'set tdesc filename " + dir +
                                       "/target.xml' -ex 'maint print remote-registers'");
    std::filesystem::remove_all(dir);
    EXPECT_EQ(out.find("warning"), std::string::npos) << out;
    // " Name Nr Rel Offset Size Type Rmt-Nr g/G-Offset": raw registers have 8 columns.
    std::map<std::string, std::pair<int, std::pair<int, int>>> gdb;  // name -> rmt, (off, size)
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::vector<std::string> f;
      for (std::string s; fields >> s;) f.push_back(s);
      if (f.size() != 8 || f[0] == "Name" || f[0] == "''") continue;
      gdb[f[0]] = {std::stoi(f[6]), {std::stoi(f[7]), std::stoi(f[4])}};
    }
    const auto layout = X86_64().GdbLayout(features);
    EXPECT_EQ(gdb.size(), layout.size()) << out;
    for (const GdbSlot& slot : layout) {
      const std::string name(X86_64().info(slot.reg).name);
      auto it = gdb.find(name);
      ASSERT_NE(it, gdb.end()) << name << "\n" << out;
      EXPECT_EQ(it->second.first, slot.regnum) << name;
      EXPECT_EQ(it->second.second.first, static_cast<int>(slot.offset)) << name;
      EXPECT_EQ(it->second.second.second, slot.size) << name;
    }
  }
}

}  // namespace
}  // namespace backstep::core
