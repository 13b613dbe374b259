#pragma once
// allot's one logger. Never stdout (the plugin's stdout carries the CNI result only).
// Two layouts, one per program, each written as text (the default) or JSON:
//   PerCall (the plugin), text: "<time to the second>Z <level> allot[<pid>] container=<id>
//     pod=<ns/name>: <msg>[ pool=.. network=.. ip=..]"; to stderr or log_file.
//   Daemon (allot-gc), text: "<time to the millisecond>Z <level> <msg>[ pool=.. network=..
//     pod=.. container=.. ip=..]" on stderr.
//   JSON (either): one object per line, {"time":"<RFC 3339 UTC, milliseconds>","level":..,
//     "msg":..} then "pool", "network", "pod", "container", "ip" for those the line concerns;
//     a field the line does not concern is omitted, never written empty.
// Levels are named debug, info, warn, error. Control characters are escaped in both formats,
// so no value can forge a line; in JSON, invalid UTF-8 becomes U+FFFD.
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

enum class Layout { PerCall, Daemon };
enum class Format { Text, Json };
// "text" or "json"; false (and `out` untouched) on anything else.
bool parseFormat(const std::string& s, Format& out);

// What a line is about, besides its message. Empty: the line does not concern it.
struct Fields {
    std::string pool;     // the IPPool, "namespace/name"
    std::string network;  // the CNI network name
    std::string pod;      // "namespace/name"
    std::string container;
    std::string ip;
};

class Logger {
  public:
    explicit Logger(Layout l = Layout::PerCall) : layout_(l) {}
    ~Logger();
    Logger(const Logger&) = delete;
    Logger& operator=(const Logger&) = delete;

    // Opens the regular file `path` for appending (mode 0600), never through a symlink; on
    // failure keeps stderr and returns false.
    bool open(const std::string& path);
    void setLevel(Level l) { level_.store(static_cast<int>(l), std::memory_order_relaxed); }
    void setFormat(Format f) { json_.store(f == Format::Json, std::memory_order_relaxed); }
    // The container and pod of every PerCall line whose Fields leave them empty.
    void setContext(const std::string& containerId, const std::string& podRef);

    void debug(const std::string& msg, const Fields& f = {}) { write(Level::Debug, msg, f); }
    void info(const std::string& msg, const Fields& f = {}) { write(Level::Info, msg, f); }
    void warn(const std::string& msg, const Fields& f = {}) { write(Level::Warn, msg, f); }
    void error(const std::string& msg, const Fields& f = {}) { write(Level::Error, msg, f); }
    // A configuration value ignored or repaired: a warning like any other.
    void warning(const std::string& msg, const Fields& f = {}) { write(Level::Warn, msg, f); }

  private:
    void write(Level l, const std::string& msg, const Fields& f);
    std::string textLine(const char* stamp, Level l, const std::string& msg, const Fields& f) const;
    const Layout layout_;
    std::atomic<int> level_{static_cast<int>(Level::Info)};
    std::atomic<bool> json_{false};
    std::mutex mutex_;
    FILE* file_ = nullptr;
    std::string containerId_;
    std::string podRef_;
};

// One line's encodings, exposed for tests: `s` as a JSON string literal (quotes included),
// and as a text-format value (quoted only when it holds a space, a quote, '=' or '\').
std::string jsonQuote(const std::string& s);
std::string textValue(const std::string& s);

// allot-gc's process-wide logger (Daemon layout, stderr) and its shorthands. Library code logs
// only through these, at the point where an error is finally handled.
Logger& daemonLog();
inline void logDebug(const std::string& msg, const Fields& f = {}) {
    daemonLog().debug(msg, f);
}
inline void logInfo(const std::string& msg, const Fields& f = {}) {
    daemonLog().info(msg, f);
}
inline void logWarn(const std::string& msg, const Fields& f = {}) {
    daemonLog().warn(msg, f);
}
inline void logError(const std::string& msg, const Fields& f = {}) {
    daemonLog().error(msg, f);
}

}  // namespace allot::logging
