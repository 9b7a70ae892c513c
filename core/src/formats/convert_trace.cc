#include <string>

#include "backstep/core/trace_writer.h"

namespace backstep::core {

Expected<std::uint64_t> ConvertTrace(TraceReader& in, TraceWriter& out, std::string_view out_name,
                                     const ProgressFn& progress) {
  // Writers name their file themselves; name it once.
  auto named = [out_name](Status s) {
    return s.ok() || s.message().starts_with(out_name) ? s : s.Annotate(out_name);
  };
  BACKSTEP_RETURN_IF_ERROR(named(
      out.Begin(in.header(), in.InitialRegisters(),
                [&in](Address a, std::span<std::uint8_t> bytes, std::span<std::uint8_t> known) {
                  in.ReadInitialMemory(a, bytes, known);
                })));
  const std::uint64_t total = in.header().declared_events.value_or(0);
  std::uint64_t count = 0;
  Event event;
  while (true) {
    BACKSTEP_ASSIGN_OR_RETURN(bool more, in.Next(&event));
    if (!more) break;
    // Placeholder read values (usercorn's MEM_READ) must not become data
    // in a format that stores values; one that stores addresses keeps them.
    if (!in.header().read_values && out.StoresReadValues()) event.reads.clear();
    BACKSTEP_RETURN_IF_ERROR(named(out.Append(event)));
    if (++count % 65536 == 0 && progress && !progress("converting", count, total)) {
      return Status::Interrupted(std::string(out_name) + ": interrupted; nothing was written");
    }
  }
  if (progress) progress("converting", count, total);
  BACKSTEP_RETURN_IF_ERROR(named(out.Finish()));
  return count;
}

}  // namespace backstep::core
