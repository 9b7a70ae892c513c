// The trace sessions of this LLDB process, one per target (a process may hold
// several debuggers: the SB API). `backstep open` adds one; commands find the
// selected target's; a debugger's destruction forgets its own.
//
// Thread-safety: LLDB's command thread only (commands and the debugger's
// destroy callback run there).
#pragma once

#include <memory>
#include <vector>

#include "lldb/API/LLDB.h"
#include "trace_session.h"

namespace backstep::lldb_plugin {

struct SessionEntry {
  lldb::user_id_t debugger_id;
  lldb::SBTarget target;
  std::unique_ptr<TraceSession> session;
};

class SessionRegistry {
 public:
  void Add(SessionEntry entry) { sessions_.push_back(std::move(entry)); }
  // The session added last.
  TraceSession& Last() { return *sessions_.back().session; }
  // Forgets the sessions of targets LLDB deleted (their stub stopped when
  // the connection closed; this joins the thread). A session whose process
  // was killed stays, to say "not connected".
  void Sweep(lldb::SBDebugger& debugger);
  // The session of `target`, nullptr if none.
  TraceSession* Find(lldb::SBTarget target);
  // Stops the stubs of a debugger being destroyed and joins their threads.
  void Forget(lldb::user_id_t debugger_id);

 private:
  std::vector<SessionEntry> sessions_;
};

// The process's registry, never destroyed: LLDB may outlive static
// destructors.
SessionRegistry& Sessions();

}  // namespace backstep::lldb_plugin
