// TraceIndexOf: a Trace's index, for core's own modules (replay, search).
//
// Front ends never see TraceIndex: they ask through trace_query.h, so the
// index layout can change without touching them.
//
// Thread-safety: the index is immutable once the Trace is open.
#pragma once

#include "backstep/core/trace.h"
#include "index/trace_index.h"

namespace backstep::core {

const TraceIndex& TraceIndexOf(const Trace& trace);

}  // namespace backstep::core
