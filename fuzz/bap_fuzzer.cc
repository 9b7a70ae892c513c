// libFuzzer entry for the BAP frames reader; the body (FuzzBapReader) lives
// with core's test support (core/src/testing/bap_fuzz.cc), where the
// reader's own API is visible.
#include <cstddef>
#include <cstdint>

#include "backstep/testing/reader_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return backstep::core::testing::FuzzBapReader(data, size);
}
