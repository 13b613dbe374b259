#pragma once
// allot's one logger. Never stdout (the plugin's stdout carries the CNI result only).
// Two line formats, one per program, because tests and users read them:
//   PerCall (the plugin): "<time to the second>Z <level> allot[<pid>] container=<id> pod=<ns/name>:
//   <msg>",
//     control characters escaped so no value can forge a line; to stderr or log_file.
//   Daemon (allot-gc): "<time to the millisecond>Z <level> <msg>" on stderr.
// Thread-safe: lines from concurrent threads never interleave.

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace allot::logging {

enum class Level { Debug = 0, Info = 1, Warn = 2, Error = 3, Off = 4 };

// The plugin's log_level, in Whereabouts' names ("verbose", "panic" too); anything else -> Info.
Level parseCniLevel(const std::string& s);
// allot-gc's: "debug", "info", "warn", "error"; false (and `out` untouched) on anything else.
bool parseLevel(const std::string& s, Level& out);

enum class Format { PerCall, Daemon };

class Logger {
  public:
    explicit Logger(Format f = Format::PerCall) : format_(f) {}
    ~Logger();
    Logger(const Logger&) = delete;
    Logger& operator=(const Logger&) = delete;

    // Opens the regular file `path` for appending (mode 0600), never through a symlink; on
    // failure keeps stderr and returns false.
    bool open(const std::string& path);
    void setLevel(Level l) { level_.store(static_cast<int>(l), std::memory_order_relaxed); }
    // Named on every PerCall line.
    void setContext(const std::string& containerId, const std::string& podRef);

    void debug(const std::string& msg) { write(Level::Debug, "debug", msg); }
    void info(const std::string& msg) { write(Level::Info, "info", msg); }
    void warn(const std::string& msg) { write(Level::Warn, "warn", msg); }
    void error(const std::string& msg) { write(Level::Error, "error", msg); }
    // A configuration value ignored or repaired: shown wherever errors are.
    void warning(const std::string& msg) { write(Level::Error, "warning", msg); }

  private:
    void write(Level l, const char* name, const std::string& msg);
    const Format format_;
    std::atomic<int> level_{static_cast<int>(Level::Info)};
    std::mutex mutex_;
    FILE* file_ = nullptr;
    std::string context_;
};

// allot-gc's process-wide logger (Daemon format, stderr) and its shorthands. Library code logs
// only through these, at the point where an error is finally handled.
Logger& daemonLog();
inline void logDebug(const std::string& msg) {
    daemonLog().debug(msg);
}
inline void logInfo(const std::string& msg) {
    daemonLog().info(msg);
}
inline void logWarn(const std::string& msg) {
    daemonLog().warn(msg);
}
inline void logError(const std::string& msg) {
    daemonLog().error(msg);
}

}  // namespace allot::logging
