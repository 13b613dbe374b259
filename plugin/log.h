#pragma once
// Plugin logging: stderr or log_file, never stdout (stdout carries the CNI result only).
// Every line names the container and the pod.

#include <cstdio>
#include <string>

namespace allot::plugin {

enum class LogLevel { Debug = 0, Info = 1, Error = 2, Off = 3 };

LogLevel parseLogLevel(const std::string& s);  // Whereabouts' names; "" -> Info

class Logger {
public:
    Logger() = default;
    ~Logger();
    Logger(const Logger&) = delete;
    Logger& operator=(const Logger&) = delete;

    // Opens the regular file `path` for appending (mode 0600), never through a symlink; on
    // failure keeps stderr and returns false.
    bool open(const std::string& path);
    void setLevel(LogLevel l) { level_ = l; }
    void setContext(const std::string& containerId, const std::string& podRef);

    void debug(const std::string& msg) { write(LogLevel::Debug, "debug", msg); }
    void info(const std::string& msg) { write(LogLevel::Info, "info", msg); }
    void error(const std::string& msg) { write(LogLevel::Error, "error", msg); }
    // A configuration value ignored or repaired: shown wherever errors are.
    void warning(const std::string& msg) { write(LogLevel::Error, "warning", msg); }

private:
    void write(LogLevel l, const char* name, const std::string& msg);
    FILE* file_ = nullptr;
    LogLevel level_ = LogLevel::Info;
    std::string context_;
};

}  // namespace allot::plugin
