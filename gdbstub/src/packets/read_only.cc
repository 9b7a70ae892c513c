#include "packets/read_only.h"

namespace backstep::gdbstub {

Reply HandleWrite(Session&, std::string_view) { return Reply::Fail("the recording is read-only"); }

Reply HandleDeclined(Session&, std::string_view) { return Reply::Empty(); }

}  // namespace backstep::gdbstub
