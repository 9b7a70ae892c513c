// vFile host I/O (gdb's `remote get`, `info proc`, /proc/PID/maps, and the
// program and libraries with sysroot "target:"), served when the target has
// HostFiles. Replies are `F<result hex>[;<escaped data>]`, or `F-1,<errno
// hex>` with gdb's File-I/O errno values:
//   vFile:setfs:<pid>                       F0 for 0 or the target's pid, else EINVAL
//   vFile:open:<hex path>,<flags>,<mode>    F<fd>; any write flag: EROFS
//   vFile:pread:<fd>,<count>,<offset>       F<n>;<data> (n cut to the packet size)
//   vFile:fstat:<fd>                        F40;<gdb's struct stat, big-endian>
//   vFile:close:<fd>                        F0
//   vFile:readlink:<hex path>               F<n>;<target>
//   vFile:pwrite / vFile:unlink             EROFS (the recording is read-only)
// A malformed packet answers EINVAL, never an `E` reply gdb would not parse.
#pragma once

#include <string_view>

#include "session/reply.h"

namespace backstep::gdbstub {

class Session;

Reply HandleFileSetFs(Session& session, std::string_view args);
Reply HandleFileOpen(Session& session, std::string_view args);
Reply HandleFilePread(Session& session, std::string_view args);
Reply HandleFileFstat(Session& session, std::string_view args);
Reply HandleFileClose(Session& session, std::string_view args);
Reply HandleFileReadlink(Session& session, std::string_view args);
Reply HandleFileWrite(Session& session, std::string_view args);

}  // namespace backstep::gdbstub
