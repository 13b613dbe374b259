#include "core/duration.h"

#include <cstdint>
#include <limits>
#include <string>

namespace allot::core {

using Millis = std::chrono::milliseconds;

namespace {

Error bad(std::string_view what, std::string_view value, const std::string& why) {
    return makeError(Errc::InvalidConfig,
                     std::string(what) + ": \"" + std::string(value.substr(0, 128)) + "\" " + why);
}

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
bool isAlpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The unit's scale in ms; 0 when UNIT is not one.
int64_t unitScale(std::string_view unit) {
    if (unit == "ms") return 1;
    if (unit == "s") return 1000;
    if (unit == "m") return 60'000;
    if (unit == "h") return 3'600'000;
    return 0;
}

}  // namespace

Result<Millis> parseDuration(std::string_view text, std::string_view what) {
    if (text == "0") return Millis(0);
    const std::string usage = "is not a duration (use e.g. 100ms, 30s, 5m, 1h, 1m30s)";
    if (text.empty()) return bad(what, text, usage);
    const int64_t cap = std::numeric_limits<int64_t>::max() / 4;
    int64_t totalMs = 0;
    size_t i = 0;
    while (i < text.size()) {
        const size_t start = i;
        int64_t n = 0;
        for (; i < text.size() && isDigit(text[i]); ++i) {
            if (i - start >= 12) return bad(what, text, "is too large");
            n = n * 10 + (text[i] - '0');
        }
        if (i == start) return bad(what, text, usage);
        const size_t ustart = i;
        while (i < text.size() && isAlpha(text[i])) ++i;
        const std::string_view unit = text.substr(ustart, i - ustart);
        const int64_t scale = unitScale(unit);
        if (unit.empty()) return bad(what, text, "needs a unit (ms, s, m or h)");
        if (scale == 0)
            return bad(what, text,
                       "has an unknown unit \"" + std::string(unit) + "\" (use ms, s, m or h)");
        if (n > cap / scale || totalMs > cap - n * scale) return bad(what, text, "is too large");
        totalMs += n * scale;
    }
    return Millis(totalMs);
}

Result<Millis> durationIn(std::string_view text, std::string_view what, Millis lo, Millis hi) {
    auto d = parseDuration(text, what);
    if (!d) return d;
    auto show = [](Millis m) {
        if (m.count() % 1000 == 0) return std::to_string(m.count() / 1000) + "s";
        return std::to_string(m.count()) + "ms";
    };
    if (*d < lo || *d > hi)
        return bad(what, text, "must be between " + show(lo) + " and " + show(hi));
    return d;
}

}  // namespace allot::core
