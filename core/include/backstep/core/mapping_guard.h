// GuardMappedFiles: surviving a mapped file that shrinks under the process.
//
// Thread-safety: both functions may be called from any thread.
#pragma once

#include <string>

namespace backstep::core {

// A file mapped by MapFile() that shrinks (truncated or rewritten in place
// while we read it) makes reads of its lost pages raise SIGBUS, which would
// kill the process. GuardMappedFiles() installs a SIGBUS handler (once;
// programs that serve traces call it, a library never does it behind its
// host's back) that, for a fault inside a mapping made by MapFile(),
// replaces the lost pages with zero pages, records the damage and resumes:
// the read sees zeros (which the decoders reject or answer as any damaged
// data) and MappedFilesDamaged() tells the caller to stop trusting what it
// serves and say why. Faults elsewhere keep their default action. Costs
// nothing until a fault: no check on the read path.
void GuardMappedFiles();
// The name of the first mapped file found shrunk since GuardMappedFiles(),
// or "" while none is. Thread-safe.
std::string MappedFilesDamaged();

}  // namespace backstep::core
