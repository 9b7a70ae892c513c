// when, info, history, last-write: answered by the stub's monitor commands,
// with LLDB expressions allowed for addresses.
#include <string>
#include <string_view>

#include "backstep/core/number.h"
#include "commands.h"

namespace backstep::lldb_plugin {

bool Query(lldb::SBDebugger debugger, const std::string& name, const Args& args, std::size_t min,
           std::size_t max, const char* usage, bool address, lldb::SBCommandReturnObject& result) {
  // `--max N` (history) goes to the monitor command as it is.
  Args positional;
  std::string max_option;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--max" || std::string_view(usage).find("--max") == std::string_view::npos) {
      positional.push_back(args[i]);
      continue;
    }
    auto n = i + 1 < args.size() ? core::ParseNumber(args[i + 1]) : std::nullopt;
    if (!n || *n == 0) return Fail(result, std::string("usage: ") + usage);
    max_option = " --max " + std::to_string(*n);
    ++i;
  }
  if (positional.size() < min || positional.size() > max)
    return Fail(result, std::string("usage: ") + usage);
  Context c;
  if (!GetContext(debugger, result, c)) return false;
  std::string command = name;
  for (std::size_t i = 0; i < positional.size(); ++i) {
    const std::string& arg = positional[i];
    if (address && i < 2) {
      std::string error;
      auto value = i == 0 ? Address(c, arg, error) : core::ParseNumber(arg);
      if (!value || (i == 1 && *value == 0)) {
        return Fail(result, error.empty() ? std::string("usage: ") + usage : error);
      }
      command += " " + std::to_string(*value);
    } else {
      command += " " + arg;
    }
  }
  auto out = c.session->Monitor(command + max_option);
  if (!out.ok()) return Fail(result, out.status().message());
  return Succeed(result, *out);
}

}  // namespace backstep::lldb_plugin
