#include "k8s_api/timestamp.h"

#include <cstdio>
#include <ctime>

namespace allot::k8s {

namespace {

std::string format(SystemTime t, bool micros) {
    using namespace std::chrono;
    const auto us = duration_cast<microseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(us / 1'000'000);
    long frac = static_cast<long>(us % 1'000'000);
    if (frac < 0) {
        frac += 1'000'000;
        --secs;
    }
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string s = buf;
    if (micros) {
        char f[16];
        std::snprintf(f, sizeof f, ".%06ld", frac);
        s += f;
    }
    return s + "Z";
}

int digits(std::string_view s, size_t pos, size_t n, bool& ok) {
    int v = 0;
    if (pos + n > s.size()) {
        ok = false;
        return 0;
    }
    for (size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') ok = false;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

}  // namespace

std::string formatTime(SystemTime t) {
    return format(t, false);
}
std::string formatMicroTime(SystemTime t) {
    return format(t, true);
}

std::optional<SystemTime> parseTime(std::string_view s) {
    bool ok = s.size() >= 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
              s[16] == ':';
    if (!ok) return std::nullopt;
    std::tm tm{};
    tm.tm_year = digits(s, 0, 4, ok) - 1900;
    tm.tm_mon = digits(s, 5, 2, ok) - 1;
    tm.tm_mday = digits(s, 8, 2, ok);
    tm.tm_hour = digits(s, 11, 2, ok);
    tm.tm_min = digits(s, 14, 2, ok);
    tm.tm_sec = digits(s, 17, 2, ok);
    if (!ok) return std::nullopt;
    size_t i = 19;
    long micros = 0;
    if (i < s.size() && s[i] == '.') {
        ++i;
        long scale = 100'000;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
            micros += (s[i] - '0') * scale;
            scale /= 10;
            ++i;
        }
    }
    // Only UTC ("Z"), which is what the API server writes.
    if (i + 1 != s.size() || s[i] != 'Z') return std::nullopt;
    const std::time_t secs = ::timegm(&tm);
    return SystemTime(std::chrono::seconds(secs)) + std::chrono::microseconds(micros);
}

}  // namespace allot::k8s
