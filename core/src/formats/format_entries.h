// The built-in formats' registry entries, one function per format, each
// defined beside its reader (formats/<fmt>/).
#pragma once

#include "backstep/core/format_registry.h"

namespace backstep::core {

FormatInfo RevenFormatInfo();
FormatInfo TfileFormatInfo();
FormatInfo UsercornFormatInfo();
FormatInfo X64dbgFormatInfo();

}  // namespace backstep::core
