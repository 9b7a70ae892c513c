// `backstep help` and `convert` list the formats of the format registry:
// every format with its description and whether it can be written, and the
// writable ones as convert's --to choices, so that help never disagrees with
// what the registry opens and writes.
#include <cstdio>
#include <string>

#include "backstep/core/format_registry.h"
#include "gtest/gtest.h"

namespace backstep::core {
namespace {

// stdout and stderr of `backstep ARGS`.
std::string Output(const std::string& args) {
  const std::string cmd = std::string(BACKSTEP_BIN) + " " + args + " 2>&1 </dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    pclose(p);
  }
  return out;
}

TEST(HelpCli, ListsEveryFormatOfTheRegistry) {
  const std::string help = Output("help");
  std::string writable;
  for (const FormatInfo& f : Formats()) {
    const std::string mode = f.create_writer ? "read, write" : "read";
    const std::size_t line = help.find("\n  " + std::string(f.name) + " ");
    ASSERT_NE(line, std::string::npos) << f.name << "\n" << help;
    const std::string text = help.substr(line + 1, help.find('\n', line + 1) - line - 1);
    EXPECT_NE(text.find(mode + " "), std::string::npos) << text;
    EXPECT_NE(text.find(std::string(f.description)), std::string::npos) << text;
    if (f.create_writer) writable += (writable.empty() ? "" : ", ") + std::string(f.name);
  }
  EXPECT_NE(help.find("(FORMAT: " + writable + ")"), std::string::npos) << help;
  // An unknown --to names the same choices.
  const std::string convert = Output("convert in.trace -o out.trace --to nosuch");
  EXPECT_NE(convert.find("unknown format 'nosuch' (writable: " + writable + ")"), std::string::npos)
      << convert;
}

}  // namespace
}  // namespace backstep::core
