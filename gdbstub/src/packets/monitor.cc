#include "packets/monitor.h"

#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {

std::optional<std::string> ParseMonitorCommand(std::string_view args) {
  return DecodeHexString(args);
}

Reply HandleMonitorCommand(Session& session, std::string_view args) {
  auto command = ParseMonitorCommand(args);
  if (!command) return Reply::BadArguments("qRcmd: malformed hex");
  auto output = session.target().monitor_commands()->RunMonitorCommand(*command);
  // gdb prints only "Protocol error with Rcmd" for an error reply: the
  // reason goes to the console first.
  if (!output.ok()) {
    return Reply::FromStatus(output.status()).WithConsole(output.status().message() + "\n");
  }
  return Reply::Ok().WithConsole(std::move(*output));
}

}  // namespace backstep::gdbstub
