// Progress reporting for long work (indexing, conversion, export).
//
// Long operations call a ProgressFn with the work done and the total (0 when
// unknown). The callback returns false to cancel, which the operation
// reports as an Interrupted status. Calls are rate-limited by the caller's
// own logic; operations call it at most every few thousand items.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace backstep::core {

// (phase, done, total) -> keep going?
using ProgressFn =
    std::function<bool(std::string_view phase, std::uint64_t done, std::uint64_t total)>;

}  // namespace backstep::core
