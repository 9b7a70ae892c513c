// qXfer:<object>:read:<annex>:<offset>,<length> (docs/protocol.md §3, §4):
//   features   the target description: target.xml and its includes
//   auxv       the recorded auxiliary vector (annex empty); routed only when
//              the target has one; LLDB needs it to load the executable
//   exec-file  the executable's path (annex: the pid in hex, or empty);
//              routed only when the target knows it; gdb then loads it
//   threads    <threads><thread id="p1.1" core="0" name="main"/></threads>
//
// Replies are `m<data>` (more follows) or `l<data>` (last), the data
// binary-escaped and cut so that the reply fits in PacketSize. An offset at
// or past the end gives `l`; an unknown annex gives E01.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

struct XferReadRequest {
  std::string_view annex;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool operator==(const XferReadRequest&) const = default;
};

// The arguments after "qXfer:<object>:read:": "<annex>:<offset>,<length>".
std::optional<XferReadRequest> ParseXferRead(std::string_view args);

// `m`/`l` + the escaped bytes of document[offset, offset+length), at most
// `max_payload` bytes in all.
std::string XferChunk(std::string_view document, std::uint64_t offset, std::uint64_t length,
                      std::size_t max_payload);

// `text` with &, <, > and " as XML entities (attribute values).
void AppendXmlEscaped(std::string& out, std::string_view text);

// The qXfer:threads document for the current position.
std::string ThreadsXml(Session& session);

Reply HandleXferFeatures(Session& session, std::string_view args);
Reply HandleXferAuxv(Session& session, std::string_view args);
Reply HandleXferExecFile(Session& session, std::string_view args);
Reply HandleXferThreads(Session& session, std::string_view args);
// The selected trace frame's collection (TraceFrames::TraceframeInfo).
Reply HandleXferTraceframeInfo(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
