// libFuzzer entry for the native engine's snapshot reader (recorder/native/
// snapshot_file.h): `record --engine native --from-log LOG` reads the
// snapshot files beside the log the user names. Any input is refused with an
// error or read; nothing else.
#include <cstddef>
#include <cstdint>
#include <span>

#include "recorder/native/snapshot_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)backstep::record::ParseSnapshot(std::span<const std::uint8_t>(data, size),
                                        "fuzz/input.nlog.snap0");
  return 0;
}
