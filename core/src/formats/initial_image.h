// FirstKnownInitialByte(): where a trace's initial memory image holds its
// first known byte, for writers of formats that cannot hold an image (tfile
// frames, x64dbg blocks) and must refuse a source that has one.
//
// Cost: reads the header's regions in 64 KiB pieces up to the first known
// byte. Thread-safety: a pure function (calls `initial_memory`).
#pragma once

#include <optional>

#include "backstep/core/trace_writer.h"

namespace backstep::core {

std::optional<Address> FirstKnownInitialByte(const TraceHeader& header,
                                             const InitialMemoryFn& initial_memory);

}  // namespace backstep::core
