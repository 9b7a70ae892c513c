// libFuzzer entry for the x64dbg reader; the body (FuzzX64dbgReader) lives with
// core's test support (core/src/testing/x64dbg_fuzz.cc), where the reader's own
// API is visible.
#include <cstddef>
#include <cstdint>

#include "backstep/testing/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return backstep::core::testing::FuzzX64dbgReader(data, size);
}
