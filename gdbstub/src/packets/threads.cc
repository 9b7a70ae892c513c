#include "packets/threads.h"

#include <algorithm>

#include "protocol/hex.h"
#include "session/session.h"

namespace backstep::gdbstub {
namespace {

// Sends as many queued ids as fit in one packet: "m1,2,3"; "l" when none.
Reply NextThreadChunk(Session& session) {
  std::vector<core::ThreadId>& rest = session.state().thread_list_rest;
  if (rest.empty()) return Reply::Packet("l");
  std::string out = "m";
  std::size_t sent = 0;
  for (core::ThreadId thread : rest) {
    std::string id;
    session.AppendThread(id, thread);
    if (sent > 0 && out.size() + 1 + id.size() > session.options().packet_size) break;
    if (sent > 0) out.push_back(',');
    out += id;
    ++sent;
  }
  rest.erase(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(sent));
  return Reply::Packet(std::move(out));
}

}  // namespace

std::optional<SetThreadRequest> ParseSetThread(std::string_view args) {
  if (args.empty()) return std::nullopt;
  SetThreadRequest request;
  if (args[0] == 'g') {
    request.op = SetThreadRequest::Op::kGeneral;
  } else if (args[0] == 'c') {
    request.op = SetThreadRequest::Op::kContinue;
  } else {
    return std::nullopt;
  }
  auto thread = ParseThreadSpec(args.substr(1));
  if (!thread) return std::nullopt;
  request.thread = *thread;
  return request;
}

Reply HandleSetThread(Session& session, std::string_view args) {
  auto request = ParseSetThread(args);
  if (!request) return Reply::BadArguments("H: malformed arguments");
  std::optional<core::ThreadId> thread;
  if (request->thread.tid.value()) {
    thread = session.ResolveThread(request->thread);
    if (!thread) return Reply::Fail("H: no such thread");
  }
  if (request->op == SetThreadRequest::Op::kGeneral) {
    session.state().general_thread = thread;
  } else {
    session.state().continue_thread = thread;
  }
  return Reply::Ok();
}

Reply HandleThreadAlive(Session& session, std::string_view args) {
  auto spec = ParseThreadSpec(args);
  if (!spec) return Reply::BadArguments("T: malformed thread id");
  if (!session.ResolveThread(*spec)) return Reply::Fail("T: no such thread");
  return Reply::Ok();
}

Reply HandleFirstThreadInfo(Session& session, std::string_view) {
  std::vector<core::ThreadId>& rest = session.state().thread_list_rest;
  rest.clear();
  for (const ThreadInfo& info : session.target().Threads()) rest.push_back(info.id);
  return NextThreadChunk(session);
}

Reply HandleNextThreadInfo(Session& session, std::string_view) { return NextThreadChunk(session); }

Reply HandleCurrentThread(Session& session, std::string_view) {
  std::string out = "QC";
  session.AppendThread(out, session.target().current_thread());
  return Reply::Packet(std::move(out));
}

Reply HandleThreadExtraInfo(Session& session, std::string_view args) {
  auto spec = ParseThreadSpec(args);
  if (!spec) return Reply::BadArguments("qThreadExtraInfo: malformed thread id");
  auto thread = session.ResolveThread(*spec);
  if (!thread) return Reply::Fail("qThreadExtraInfo: no such thread");
  for (const ThreadInfo& info : session.target().Threads()) {
    if (info.id == *thread) return Reply::Packet(HexBytes(info.name));
  }
  return Reply::Fail("qThreadExtraInfo: no such thread");
}

}  // namespace backstep::gdbstub
