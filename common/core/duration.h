#pragma once
// The one duration grammar of allot's flags (allot-gc's and kubectl-allot's): Go's
// time.ParseDuration for whole numbers, as kubectl and the kubelet take them. A duration is
// one or more NUMBER UNIT terms (units ms, s, m, h: 100ms, 30s, 5m, 1h, 1m30s); "0" alone is
// zero. A bare number other than 0 is refused: "30" might mean seconds or minutes.

#include <chrono>
#include <string_view>

#include "core/result.h"

namespace allot::core {

// TEXT as milliseconds; an error names WHAT (the flag) and TEXT. At most about 10^12 ms per
// term and 2^61 ms in all.
Result<std::chrono::milliseconds> parseDuration(std::string_view text, std::string_view what);

// parseDuration, also refusing a duration outside [LO, HI] with the bounds in the message.
Result<std::chrono::milliseconds> durationIn(std::string_view text, std::string_view what,
                                             std::chrono::milliseconds lo,
                                             std::chrono::milliseconds hi);

}  // namespace allot::core
