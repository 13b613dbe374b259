#include "gc-sidecar/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace allot::gc {

namespace {

std::atomic<int> gLevel{static_cast<int>(LogLevel::Info)};
std::mutex gMutex;

void write(LogLevel l, const char* name, const std::string& msg) {
    if (static_cast<int>(l) < gLevel.load(std::memory_order_relaxed)) return;
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000;
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    std::lock_guard lock(gMutex);
    std::fprintf(stderr, "%s.%03dZ %s %s\n", stamp, static_cast<int>(ms), name, msg.c_str());
}

}  // namespace

bool parseLogLevel(const std::string& s, LogLevel& out) {
    if (s == "debug")
        out = LogLevel::Debug;
    else if (s == "info")
        out = LogLevel::Info;
    else if (s == "warn")
        out = LogLevel::Warn;
    else if (s == "error")
        out = LogLevel::Error;
    else
        return false;
    return true;
}

void setLogLevel(LogLevel l) {
    gLevel.store(static_cast<int>(l));
}

void logDebug(const std::string& msg) {
    write(LogLevel::Debug, "debug", msg);
}
void logInfo(const std::string& msg) {
    write(LogLevel::Info, "info", msg);
}
void logWarn(const std::string& msg) {
    write(LogLevel::Warn, "warn", msg);
}
void logError(const std::string& msg) {
    write(LogLevel::Error, "error", msg);
}

}  // namespace allot::gc
