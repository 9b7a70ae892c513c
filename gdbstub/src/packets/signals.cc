#include "packets/signals.h"

#include <vector>

#include "packets/xfer.h"
#include "protocol/gdb_signals.h"
#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {

Reply HandlePassSignals(Session& session, std::string_view args) {
  if (!args.starts_with(':')) return Reply::BadArguments("QPassSignals: expected ':'");
  args.remove_prefix(1);
  // LLDB (QThreadSuffixSupported) sends Linux numbers; gdb its own.
  const bool host_numbers = session.state().negotiated.thread_suffix;
  std::vector<int> signals;
  while (!args.empty()) {
    const std::size_t end = args.find(';');
    const std::string_view item = args.substr(0, end);
    args = end == std::string_view::npos ? std::string_view() : args.substr(end + 1);
    const std::optional<std::uint64_t> number = ParseHexU64(item);
    if (!number || *number > 0xff) return Reply::BadArguments("QPassSignals: bad signal number");
    const std::optional<int> linux_signal =
        host_numbers ? std::optional<int>(static_cast<int>(*number))
                     : LinuxSignalFromGdb(static_cast<std::uint8_t>(*number));
    if (linux_signal) signals.push_back(*linux_signal);
  }
  session.target().signals()->SetPassSignals(std::move(signals));
  return Reply::Ok();
}

Reply HandleProgramSignals(Session&, std::string_view) { return Reply::Ok(); }

Reply HandleCatchSyscalls(Session& session, std::string_view args) {
  if (args == ":0") {
    session.target().signals()->CatchSyscalls(std::nullopt);
    return Reply::Ok();
  }
  if (!args.starts_with(":1")) return Reply::BadArguments("QCatchSyscalls: expected :0 or :1");
  args.remove_prefix(2);
  std::vector<std::uint64_t> numbers;
  while (!args.empty()) {
    if (!args.starts_with(';')) return Reply::BadArguments("QCatchSyscalls: expected ';'");
    args.remove_prefix(1);
    const std::size_t end = args.find(';');
    const std::optional<std::uint64_t> number = ParseHexU64(args.substr(0, end));
    if (!number) return Reply::BadArguments("QCatchSyscalls: bad system call number");
    numbers.push_back(*number);
    args = end == std::string_view::npos ? std::string_view() : args.substr(end);
  }
  session.target().signals()->CatchSyscalls(std::move(numbers));
  return Reply::Ok();
}

Reply HandleXferSiginfo(Session& session, std::string_view args) {
  const std::optional<XferReadRequest> request = ParseXferRead(args);
  if (!request) return Reply::BadArguments("qXfer: malformed arguments");
  if (!request->annex.empty()) return Reply::Fail("qXfer:siginfo: no such annex");
  core::Expected<std::vector<std::uint8_t>> info = session.target().signals()->SignalInfo();
  if (!info.ok()) return Reply::FromStatus(info.status());
  const std::string_view document(reinterpret_cast<const char*>(info->data()), info->size());
  return Reply::Packet(
      XferChunk(document, request->offset, request->length, session.options().packet_size));
}

}  // namespace backstep::gdbstub
