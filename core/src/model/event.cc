#include "backstep/core/event.h"

namespace backstep::core {

std::string_view EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kInstruction:
      return "instruction";
    case EventKind::kSyscall:
      return "syscall";
    case EventKind::kInterrupt:
      return "interrupt";
    case EventKind::kException:
      return "exception";
    case EventKind::kMarker:
      return "marker";
    case EventKind::kFrame:
      return "frame";
  }
  return "unknown";
}

}  // namespace backstep::core
