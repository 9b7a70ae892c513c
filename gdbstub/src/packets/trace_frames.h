// tfind over the live stub (docs/protocol.md §8), routed only when the target has
// TraceFrames:
//
//   QTFrame:<n>                 frame n                  F<frame>T<tracepoint> / F-1
//   QTFrame:pc:<addr>           next frame at PC addr
//   QTFrame:tdp:<t>             next frame of tracepoint t
//   QTFrame:range:<lo>:<hi>     next frame with lo <= PC <= hi
//   QTFrame:outside:<lo>:<hi>   next frame with PC outside [lo, hi]
//   QTFrame:ffffffff            stop looking at frames   F-1
//   qTStatus T0;tnotrun:0;tframes:<n>;tcreated:<n>;tfree:0;tsize:0;circular:0;disconn:0 qTfP, qTsP,
//   qTfV, qTsV      l (no tracepoint or variable definitions)
//
// Numbers are hex. A selected frame makes g/p/m answer at its position; a
// failed search keeps the selection (gdbserver does the same). Re-sending
// the current frame is idempotent (gdb resyncs that way).
#pragma once

#include <optional>
#include <string_view>

#include "backstep/gdbstub/capabilities.h"
#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

struct QTFrameRequest {
  std::optional<TraceFrameQuery> query;  // nullopt: QTFrame:ffffffff (none)
};

// The arguments after "QTFrame:".
std::optional<QTFrameRequest> ParseQTFrame(std::string_view args);

Reply HandleSelectTraceFrame(Session& session, std::string_view args);  // QTFrame:
Reply HandleTraceStatus(Session& session, std::string_view args);       // qTStatus
// Tracepoint and trace state variable upload: the target's definitions
// (TraceFrames::tracepoint_definitions), one per packet, then `l`.
// `first`: qTfP / qTfV (from the start), else qTsP / qTsV (the next one).
Reply HandleTracepointUpload(Session& session, bool first);
Reply HandleVariableUpload(Session& session, bool first);
template <bool first>
Reply HandleTracepointUploadPacket(Session& session, std::string_view) {  // qTfP qTsP
  return HandleTracepointUpload(session, first);
}
template <bool first>
Reply HandleVariableUploadPacket(Session& session, std::string_view) {  // qTfV qTsV
  return HandleVariableUpload(session, first);
}
// qTP:<number>:<address>: `V<hits>:<usage>` as the file recorded them, else
// empty (unknown).
Reply HandleTracepointStatus(Session& session, std::string_view args);  // qTP:
// qTV:<hex number>: `V<hex value>` at the selected frame, `U` if unknown.
Reply HandleTraceVariable(Session& session, std::string_view args);  // qTV:

}  // namespace backstep::gdbstub
