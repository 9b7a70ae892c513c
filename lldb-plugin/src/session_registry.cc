#include "session_registry.h"

#include <cstdint>

namespace backstep::lldb_plugin {

void SessionRegistry::Sweep(lldb::SBDebugger& debugger) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->debugger_id == debugger.GetID() &&
        debugger.GetIndexOfTarget(it->target) == UINT32_MAX) {
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

TraceSession* SessionRegistry::Find(lldb::SBTarget target) {
  for (SessionEntry& e : sessions_) {
    if (e.target == target) return e.session.get();
  }
  return nullptr;
}

void SessionRegistry::Forget(lldb::user_id_t debugger_id) {
  std::erase_if(sessions_, [&](const SessionEntry& e) { return e.debugger_id == debugger_id; });
}

SessionRegistry& Sessions() {
  static SessionRegistry* registry = new SessionRegistry;
  return *registry;
}

}  // namespace backstep::lldb_plugin
