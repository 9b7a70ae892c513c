// The built-in formats' registry entries, one function per format, each
// defined beside its reader (formats/<fmt>/).
#pragma once

#include "backstep/core/format_registry.h"

namespace backstep::core {

FormatInfo BapFormatInfo();
FormatInfo RevenFormatInfo();
FormatInfo TfileFormatInfo();
FormatInfo UsercornFormatInfo();

}  // namespace backstep::core
