// libFuzzer entry for the native engine's log reader (recorder/native/
// native_log.h): `record --engine native --from-log LOG` reads a log the
// user names. Any input is refused with an error or read; nothing else.
#include <cstddef>
#include <cstdint>
#include <span>

#include "recorder/native/native_log.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)backstep::record::ParseNativeLog(std::span<const std::uint8_t>(data, size),
                                         "fuzz/input.nlog");
  return 0;
}
