#include "packets/xfer.h"

#include "protocol/hex.h"
#include "protocol/response_writer.h"
#include "session/session.h"

namespace backstep::gdbstub {
void AppendXmlEscaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
}

namespace {

Reply ReadDocument(Session& session, std::string_view args,
                   std::optional<std::string_view> (*lookup)(Session&, std::string_view)) {
  auto request = ParseXferRead(args);
  if (!request) return Reply::BadArguments("qXfer: malformed arguments");
  auto document = lookup(session, request->annex);
  if (!document) return Reply::Fail("qXfer: no such annex");
  return Reply::Packet(
      XferChunk(*document, request->offset, request->length, session.options().packet_size));
}

}  // namespace

std::optional<XferReadRequest> ParseXferRead(std::string_view args) {
  std::size_t colon = args.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view range = args.substr(colon + 1);
  std::size_t comma = range.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  auto offset = ParseHexU64(range.substr(0, comma));
  auto length = ParseHexU64(range.substr(comma + 1));
  if (!offset || !length) return std::nullopt;
  return XferReadRequest{args.substr(0, colon), *offset, *length};
}

std::string XferChunk(std::string_view document, std::uint64_t offset, std::uint64_t length,
                      std::size_t max_payload) {
  if (offset >= document.size()) return "l";
  std::string_view rest = document.substr(static_cast<std::size_t>(offset));
  if (length < rest.size()) rest = rest.substr(0, static_cast<std::size_t>(length));
  // Take bytes while their escaped form fits after the one-byte marker.
  std::size_t budget = max_payload > 1 ? max_payload - 1 : 0;
  std::size_t take = 0, escaped = 0;
  while (take < rest.size()) {
    std::size_t cost = NeedsEscape(static_cast<std::uint8_t>(rest[take])) ? 2 : 1;
    if (escaped + cost > budget) break;
    escaped += cost;
    ++take;
  }
  bool last = offset + take >= document.size();
  std::string out(1, last ? 'l' : 'm');
  out.reserve(1 + escaped);
  AppendEscapedBinary(out, rest.substr(0, take));
  return out;
}

std::string ThreadsXml(Session& session) {
  std::string out = "<?xml version=\"1.0\"?><threads>";
  for (const ThreadInfo& info : session.target().Threads()) {
    out += "<thread id=\"";
    session.AppendThread(out, info.id);
    out += '"';
    if (info.core) out += " core=\"" + std::to_string(*info.core) + '"';
    if (!info.name.empty()) {
      out += " name=\"";
      AppendXmlEscaped(out, info.name);
      out += '"';
    }
    out += "/>";
  }
  out += "</threads>";
  return out;
}

Reply HandleXferFeatures(Session& session, std::string_view args) {
  return ReadDocument(session, args, [](Session& s, std::string_view annex) {
    return s.target().TargetDescription(annex);
  });
}

Reply HandleXferAuxv(Session& session, std::string_view args) {
  return ReadDocument(
      session, args, [](Session& s, std::string_view annex) -> std::optional<std::string_view> {
        if (!annex.empty()) return std::nullopt;
        auto auxv = s.target().auxv();
        return std::string_view(reinterpret_cast<const char*>(auxv.data()), auxv.size());
      });
}

Reply HandleXferExecFile(Session& session, std::string_view args) {
  return ReadDocument(session, args,
                      [](Session& s, std::string_view annex) -> std::optional<std::string_view> {
                        // The annex is the pid in hex (gdb) or empty: there is one process.
                        if (!annex.empty() && !ParseHexU64(annex)) return std::nullopt;
                        return s.target().exec_file();
                      });
}

Reply HandleXferThreads(Session& session, std::string_view args) {
  auto request = ParseXferRead(args);
  if (!request) return Reply::BadArguments("qXfer: malformed arguments");
  if (!request->annex.empty()) return Reply::Fail("qXfer:threads: no such annex");
  // Rebuilt per chunk: the list is stable while the target is stopped.
  std::string document = ThreadsXml(session);
  return Reply::Packet(
      XferChunk(document, request->offset, request->length, session.options().packet_size));
}

Reply HandleXferTraceframeInfo(Session& session, std::string_view args) {
  auto request = ParseXferRead(args);
  if (!request) return Reply::BadArguments("qXfer: malformed arguments");
  if (!request->annex.empty()) return Reply::Fail("qXfer:traceframe-info: no such annex");
  std::optional<std::string> document = session.target().trace_frames()->TraceframeInfo();
  if (!document) return Reply::Fail("qXfer:traceframe-info: no trace frame is selected");
  return Reply::Packet(
      XferChunk(*document, request->offset, request->length, session.options().packet_size));
}

}  // namespace backstep::gdbstub
