#pragma once
// allot-gc's log: one line per message on stderr, with a UTC timestamp and level. Thread-safe.
// Library code logs only through this, at the point where an error is finally handled.

#include <string>

namespace allot::gc {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };

// "debug", "info", "warn", "error"; nullopt-like false on anything else.
bool parseLogLevel(const std::string& s, LogLevel& out);
void setLogLevel(LogLevel l);

void logDebug(const std::string& msg);
void logInfo(const std::string& msg);
void logWarn(const std::string& msg);
void logError(const std::string& msg);

}  // namespace allot::gc
