// Opening a trace from the command line: cache-dir option, progress bar while
// the index is built, interrupt handling.
#pragma once

#include <memory>
#include <string>

#include "backstep/core/expected.h"
#include "backstep/core/trace.h"
#include "cli/cli.h"

namespace backstep::cli {

// Takes --cache-dir (and --single-pass: build a missing index in one pass
// even when the trace has resume points) from `args` and opens `path`
// (building its index with a progress bar if needed).
// `options` holds what the command sets itself (`index --force`: rebuild_index).
core::Expected<std::shared_ptr<core::Trace>> OpenTraceForCli(const std::string& path, Args& args,
                                                             core::OpenOptions options = {});

// How the index came to be, for `info` and `index`: "up to date (reused)",
// "built now (missing; 2 parts in parallel from the trace's resume points)",
// "built now (stale: ...; single pass: <why not parallel>)".
std::string IndexStatusText(const core::IndexStatus& status);

// Parses "N", "end" or "P%" into a position of `trace`.
std::optional<core::Position> ParsePosition(std::string_view text, const core::Trace& trace);

}  // namespace backstep::cli
