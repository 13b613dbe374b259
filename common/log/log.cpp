#include "log/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <initializer_list>
#include <utility>

#include "sys/fd.h"

namespace allot::logging {

Level parseCniLevel(const std::string& s) {
    if (s == "debug" || s == "verbose") return Level::Debug;
    if (s == "error" || s == "panic") return Level::Error;
    return Level::Info;
}

bool parseFormat(const std::string& s, Format& out) {
    if (s == "text")
        out = Format::Text;
    else if (s == "json")
        out = Format::Json;
    else
        return false;
    return true;
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
    containerId_ = containerId;
    podRef_ = podRef;
}

namespace {

const char* levelName(Level l) {
    switch (l) {
        case Level::Debug:
            return "debug";
        case Level::Info:
            return "info";
        case Level::Warn:
            return "warn";
        default:
            return "error";
    }
}

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

// The length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629: no overlong form,
// no surrogate, nothing past U+10FFFF); 0 when there is none.
size_t utf8Length(const std::string& s, size_t i) {
    const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = at(i);
    if (c < 0x80) return 1;
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the bounds of the second byte
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    if (c >= 0xe0 && c <= 0xef) n = 3;
    if (c >= 0xf0 && c <= 0xf4) n = 4;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
    if (n == 0 || i + n > s.size() || at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (size_t k = 2; k < n; ++k)
        if (at(i + k) < 0x80 || at(i + k) > 0xbf) return 0;
    return n;
}

std::string timestamp(std::chrono::system_clock::time_point now, bool millis) {
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char stamp[40];
    size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    if (millis) {
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
            1000;
        n += std::snprintf(stamp + n, sizeof stamp - n, ".%03d", static_cast<int>(ms));
    }
    return std::string(stamp, n) + "Z";
}

// `pool=... network=...` for the fields that are set, each after a space.
void appendTextFields(std::string& out,
                      std::initializer_list<std::pair<const char*, const std::string*>> kv) {
    for (const auto& [key, value] : kv)
        if (!value->empty()) out += std::string(" ") + key + "=" + textValue(*value);
}

}  // namespace

std::string jsonQuote(const std::string& s) {
    std::string out = "\"";
    out.reserve(s.size() + 2);
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        const size_t n = utf8Length(s, i);
        if (n == 0) {
            out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER, for one invalid byte
            ++i;
            continue;
        }
        i += n;
        if (n > 1) {
            out.append(s, i - n, n);
        } else if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string textValue(const std::string& s) {
    if (s.find_first_of(" \"=\\") == std::string::npos) return oneLine(s);
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return oneLine(out + "\"");
}

std::string Logger::textLine(const char* stamp, Level l, const std::string& msg,
                             const Fields& f) const {
    std::string out = stamp;
    out += std::string(" ") + levelName(l) + " ";
    if (layout_ == Layout::PerCall) {
        const std::string& c = f.container.empty() ? containerId_ : f.container;
        const std::string& p = f.pod.empty() ? podRef_ : f.pod;
        out += "allot[" + std::to_string(::getpid()) +
               "] container=" + (c.empty() ? "-" : oneLine(c)) +
               " pod=" + (p.empty() ? "-" : oneLine(p)) + ": " + oneLine(msg);
        appendTextFields(out, {{"pool", &f.pool}, {"network", &f.network}, {"ip", &f.ip}});
    } else {
        out += oneLine(msg);
        appendTextFields(out, {{"pool", &f.pool},
                               {"network", &f.network},
                               {"pod", &f.pod},
                               {"container", &f.container},
                               {"ip", &f.ip}});
    }
    return out + "\n";
}

void Logger::write(Level l, const std::string& msg, const Fields& f) {
    if (static_cast<int>(l) < level_.load(std::memory_order_relaxed)) return;
    const auto now = std::chrono::system_clock::now();
    const bool json = json_.load(std::memory_order_relaxed);
    const std::string stamp = timestamp(now, json || layout_ == Layout::Daemon);
    std::lock_guard lock(mutex_);
    std::string line;
    if (json) {
        const bool perCall = layout_ == Layout::PerCall;
        const std::string& c = f.container.empty() && perCall ? containerId_ : f.container;
        const std::string& p = f.pod.empty() && perCall ? podRef_ : f.pod;
        line = "{\"time\":\"" + stamp + "\",\"level\":\"" + levelName(l) +
               "\",\"msg\":" + jsonQuote(msg);
        for (const auto& [key, value] :
             {std::pair<const char*, const std::string*>{"pool", &f.pool},
              {"network", &f.network},
              {"pod", &p},
              {"container", &c},
              {"ip", &f.ip}})
            if (!value->empty()) line += std::string(",\"") + key + "\":" + jsonQuote(*value);
        line += "}\n";
    } else {
        line = textLine(stamp.c_str(), l, msg, f);
    }
    FILE* out = file_ ? file_ : stderr;
    std::fwrite(line.data(), 1, line.size(), out);
    std::fflush(out);
}

Logger& daemonLog() {
    static Logger logger(Layout::Daemon);
    return logger;
}

}  // namespace allot::logging
