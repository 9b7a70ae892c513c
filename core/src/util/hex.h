// Forwarder: hex formatting is public (backstep/core/hex.h).
#pragma once

#include "backstep/core/hex.h"
