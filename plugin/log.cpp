#include "plugin/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace allot::plugin {

LogLevel parseLogLevel(const std::string& s) {
    if (s == "debug" || s == "verbose") return LogLevel::Debug;
    if (s == "error" || s == "panic") return LogLevel::Error;
    return LogLevel::Info;
}

Logger::~Logger() {
    if (file_) std::fclose(file_);
}

bool Logger::open(const std::string& path) {
    // Never through a symlink, never a FIFO or device (O_NONBLOCK: opening a FIFO does not
    // wait for a reader): only a regular file.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0) return false;
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return false;
    }
    FILE* f = ::fdopen(fd, "a");
    if (!f) {
        ::close(fd);
        return false;
    }
    if (file_) std::fclose(file_);
    file_ = f;
    return true;
}

void Logger::setContext(const std::string& containerId, const std::string& podRef) {
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

void Logger::write(LogLevel l, const char* name, const std::string& msg) {
    if (l < level_) return;
    char ts[32];
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    FILE* out = file_ ? file_ : stderr;
    std::fprintf(out, "%s %s allot[%d] %s: %s\n", ts, name, static_cast<int>(::getpid()),
                 oneLine(context_).c_str(), oneLine(msg).c_str());
    std::fflush(out);
}

}  // namespace allot::plugin
