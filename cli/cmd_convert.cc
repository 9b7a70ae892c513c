// backstep convert IN -o OUT --to FORMAT
#include <cstdio>

#include "backstep/core/format_registry.h"
#include "backstep/core/trace_writer.h"
#include "cli/cli.h"

namespace backstep::cli {

int RunConvert(Args& args) {
  std::optional<std::string> out = args.TakeOutput();
  std::optional<std::string> to = args.TakeOption("to");
  auto files = args.Positionals();
  if (files.size() != 1) return Usage("convert takes one input trace");
  if (auto problem = args.Problem()) return Usage(*problem);
  if (!out) return Usage("convert needs -o OUT");
  if (!to) return Usage("convert needs --to FORMAT");
  const core::FormatInfo* format = core::FindFormat(*to);
  if (!format) {
    return Usage("unknown format '" + *to + "' (writable: " + core::FormatNames(true) + ")");
  }
  if (!format->create_writer) return Usage("format '" + *to + "' has no writer");
  if (SameFile(files[0], *out)) {
    return Fail(core::Status::InvalidArgument(*out + ": refusing to overwrite the input trace"));
  }

  auto reader = core::OpenTraceFile(files[0]);
  if (!reader.ok()) return Fail(reader.status());
  auto writer = format->create_writer(*out);
  if (!writer.ok()) return Fail(writer.status());
  auto count = core::ConvertTrace(**reader, **writer, *out, TerminalProgress());
  FinishProgress();
  if (!count.ok()) return Fail(count.status());
  std::printf("%s: %llu events written as %s\n", out->c_str(),
              static_cast<unsigned long long>(*count), format->name.data());
  return 0;
}

}  // namespace backstep::cli
