#include "log/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include "sys/fd.h"

namespace allot::logging {

Level parseCniLevel(const std::string& s) {
    if (s == "debug" || s == "verbose") return Level::Debug;
    if (s == "error" || s == "panic") return Level::Error;
    return Level::Info;
}

bool parseLevel(const std::string& s, Level& out) {
    if (s == "debug")
        out = Level::Debug;
    else if (s == "info")
        out = Level::Info;
    else if (s == "warn")
        out = Level::Warn;
    else if (s == "error")
        out = Level::Error;
    else
        return false;
    return true;
}

Logger::~Logger() {
    if (file_) std::fclose(file_);
}

bool Logger::open(const std::string& path) {
    // Never through a symlink, never a FIFO or device (O_NONBLOCK: opening a FIFO does not
    // wait for a reader): only a regular file.
    sys::Fd fd(::open(path.c_str(),
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
    if (!fd) return false;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    FILE* f = ::fdopen(fd.get(), "a");
    if (!f) return false;
    fd.release();  // the FILE owns it now
    std::lock_guard lock(mutex_);
    if (file_) std::fclose(file_);
    file_ = f;
    return true;
}

void Logger::setContext(const std::string& containerId, const std::string& podRef) {
    std::lock_guard lock(mutex_);
    context_ = "container=" + (containerId.empty() ? std::string("-") : containerId) +
               " pod=" + (podRef.empty() ? std::string("-") : podRef);
}

namespace {

// One record per line: control characters from a config value or an API answer are written
// escaped, so no value can forge a log line.
std::string oneLine(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (unsigned char c : s) {
        if (c >= 0x20 && c != 0x7f) {
            out.push_back(static_cast<char>(c));
            continue;
        }
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
    }
    return out;
}

}  // namespace

void Logger::write(Level l, const char* name, const std::string& msg) {
    if (static_cast<int>(l) < level_.load(std::memory_order_relaxed)) return;
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    std::lock_guard lock(mutex_);
    FILE* out = file_ ? file_ : stderr;
    if (format_ == Format::PerCall) {
        std::fprintf(out, "%sZ %s allot[%d] %s: %s\n", stamp, name, static_cast<int>(::getpid()),
                     oneLine(context_).c_str(), oneLine(msg).c_str());
        std::fflush(out);
        return;
    }
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000;
    std::fprintf(out, "%s.%03dZ %s %s\n", stamp, static_cast<int>(ms), name, msg.c_str());
}

Logger& daemonLog() {
    static Logger logger(Format::Daemon);
    return logger;
}

}  // namespace allot::logging
