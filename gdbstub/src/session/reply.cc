#include "session/reply.h"

#include <cassert>

namespace backstep::gdbstub {

Reply Reply::FromStatus(const core::Status& status) {
  assert(!status.ok());
  switch (status.code()) {
    case core::StatusCode::kUnsupported:
      return Empty();
    case core::StatusCode::kInvalidArgument:
      return BadArguments(status.ToString());
    default:
      return Fail(status.ToString());
  }
}

}  // namespace backstep::gdbstub
