// libFuzzer entry for the index reader; the body (FuzzIndex) lives with
// core's test support (core/src/testing/index_fuzz.cc), where the index's
// own API is visible.
#include <cstddef>
#include <cstdint>

#include "backstep/testing/index_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return backstep::core::testing::FuzzIndex(data, size);
}
