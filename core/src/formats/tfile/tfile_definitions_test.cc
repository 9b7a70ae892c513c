// Definition lines: gdb's own lines re-formatted byte for byte, and the
// parser's handling of each line kind.
#include "formats/tfile/tfile_definitions.h"

#include <gtest/gtest.h>

#include "backstep/testing/tfile_fixtures.h"

namespace backstep::core {
namespace {

std::vector<std::string> DefinitionLines(const std::vector<std::uint8_t>& file) {
  std::vector<std::string> lines;
  std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
  text.remove_prefix(8);
  while (true) {
    const std::size_t nl = text.find('\n');
    if (nl == 0 || nl == std::string_view::npos) break;
    lines.emplace_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  return lines;
}

// Parsing gdb's tsv and tp lines and formatting them again gives the very
// same lines, in the same order.
TEST(TfileDefinitionsTest, GdbLinesFormatBackIdentically) {
  for (const char* name : {"work_amd64.tf", "stepping_amd64.tf"}) {
    SCOPED_TRACE(name);
    const auto file = testing::ReadFileBytes(testing::SamplesDir() + "/gdb_tfile/" + name);
    ASSERT_FALSE(file.empty()) << "missing sample (set BACKSTEP_SAMPLES_DIR)";
    TfileDefinitions defs;
    std::vector<std::string> original;
    int n = 2;
    for (const std::string& line : DefinitionLines(file)) {
      std::string warning;
      ASSERT_TRUE(ParseTfileDefinitionLine(line, &defs, &warning).ok());
      EXPECT_EQ(warning, "") << "line " << n++;
      if (line.starts_with("tp ") || line.starts_with("tsv ")) original.push_back(line);
    }
    std::vector<std::string> formatted;
    for (const TfileTsv& tsv : defs.tsvs) formatted.push_back(FormatTfileTsvLine(tsv));
    for (const TfileTracepoint& tp : defs.tracepoints) {
      for (std::string& l : FormatTfileTracepointLines(tp)) formatted.push_back(std::move(l));
    }
    EXPECT_EQ(formatted, original);
    ASSERT_TRUE(defs.status.has_value());
    EXPECT_EQ(defs.status->stop_reason, "tstop");
    EXPECT_FALSE(defs.status->running);
    EXPECT_EQ(defs.status->size, 0x500000u);
    EXPECT_EQ(defs.register_block_size, 0x970u);
    EXPECT_EQ(defs.TdescXml().find("<architecture>i386:x86-64</architecture>") != std::string::npos,
              true);
  }
}

TfileDefinitions Parse(std::initializer_list<std::string_view> lines) {
  TfileDefinitions defs;
  for (std::string_view l : lines) {
    std::string warning;
    EXPECT_TRUE(ParseTfileDefinitionLine(l, &defs, &warning).ok()) << l;
    if (!warning.empty()) defs.warnings.push_back(warning);
  }
  return defs;
}

TEST(TfileDefinitionsTest, TracepointPieces) {
  auto defs = Parse({"tp T2:401132:D:4:a:F5:S:X3,aabbcc", "tp A2:401132:R0100c0",
                     "tp S2:401132:R0fff", "tp Z2:401132:cond:0:3:783e31", "tp V2:401132:5:65",
                     "tp A2:401200:M-1,10,8", "tp T7:0:E:0:0:Q9"});
  ASSERT_EQ(defs.tracepoints.size(), 3u);
  const TfileTracepoint& t = defs.tracepoints[0];
  EXPECT_FALSE(t.enabled);
  EXPECT_EQ(t.step_count, 4u);
  EXPECT_EQ(t.pass_count, 10u);
  EXPECT_EQ(t.fast_size, 5u);
  EXPECT_TRUE(t.is_static);
  EXPECT_EQ(t.condition, "aabbcc");
  EXPECT_EQ(t.cond_string, "x>1");
  EXPECT_EQ(t.hits, 5u);
  EXPECT_EQ(t.traceframe_usage, 0x65u);
  // A piece for another address is another location, without a T line.
  EXPECT_EQ(defs.tracepoints[1].address, 0x401200u);
  EXPECT_FALSE(defs.tracepoints[1].defined);
  EXPECT_EQ(defs.FindTracepoints(2).size(), 2u);
  // An unknown optional field: warned, the tracepoint kept.
  EXPECT_TRUE(defs.tracepoints[2].defined);
  ASSERT_EQ(defs.warnings.size(), 1u);
  EXPECT_NE(defs.warnings[0].find("unrecognized field 'Q9'"), std::string::npos);
  EXPECT_NE(DescribeTfileTracepoint(defs.tracepoints[1], 2).find("(no definition line)"),
            std::string::npos);
}

TEST(TfileDefinitionsTest, MalformedLinesAreWarnings) {
  auto defs = Parse({"tp T2:zz:E:0:0", "tp Q2:1:2", "tp T2:1:X:0:0", "tp Z2:1:at:0:2:4",
                     "tp V2:1:5", "tsv 1:0", "tsv 2:0:0:6g", "status 0;tframes:zz;tstop",
                     "what is this", "tp ", "R 10", "R 20"});
  EXPECT_TRUE(defs.tracepoints.empty() || !defs.tracepoints.front().defined);
  EXPECT_TRUE(defs.tsvs.empty());
  EXPECT_EQ(defs.register_block_size, 0x20u);
  EXPECT_EQ(defs.warnings.size(), 11u);
  ASSERT_TRUE(defs.status.has_value());
  EXPECT_FALSE(defs.status->frames.has_value());
}

TEST(TfileDefinitionsTest, StatusFields) {
  std::string warning;
  TfileStatus s = ParseTfileStatus(
      "1;terror:6f6f7073:3;tframes:a;tcreated:b;tfree:10;tsize:20;circular:1;disconn:1;"
      "starttime:5;stoptime:6;notes:6869;username:6d65;future:1:2",
      &warning);
  EXPECT_EQ(warning, "");
  EXPECT_TRUE(s.running);
  EXPECT_EQ(s.stop_reason, "terror");
  EXPECT_EQ(s.stop_notes, "oops");
  EXPECT_EQ(s.stopping_tracepoint, 3u);
  EXPECT_EQ(s.frames, 10u);
  EXPECT_EQ(s.created, 11u);
  EXPECT_EQ(s.notes, "hi");
  EXPECT_EQ(s.user, "me");
  EXPECT_EQ(DescribeTfileStatus(s),
            "running, stop reason terror (tracepoint 3), stop notes \"oops\", 10 frames (11 "
            "created), buffer 0x20 bytes, 0x10 free, circular, disconnected tracing, start time "
            "0x5, stop time 0x6, notes \"hi\", user \"me\"");
  s = ParseTfileStatus("0;tstop:3", &warning);  // gdb's older form
  EXPECT_EQ(s.stopping_tracepoint, 3u);
  s = ParseTfileStatus("0;tpasscount:4", &warning);
  EXPECT_EQ(s.stopping_tracepoint, 4u);
  EXPECT_EQ(warning, "");
}

}  // namespace
}  // namespace backstep::core
