// The emulation engine's entry points when Unicorn is not installed: the
// engine is not built and `--engine emu` says why.
#include "recorder/emu/emu_recorder.h"

namespace backstep::record {

bool EmulatorAvailable() { return false; }

core::Expected<RecordResult> RecordEmulated(const RecordOptions&, RecordingSink&,
                                            const EmuOptions&) {
  return core::Status::Unsupported(
      "--engine emu: this backstep was built without Unicorn (install libunicorn-dev and "
      "rebuild); use --engine ptrace");
}

}  // namespace backstep::record
