#include "node_state/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "sys/fd.h"

namespace allot::node_state {

using sys::Fd;

using core::Errc;
using core::makeError;

core::Error ioError(const std::string& what) {
    return makeError(Errc::Internal, what + ": " + std::strerror(errno));
}

core::Result<void> makeDirs(const std::string& dir, unsigned mode) {
    if (dir.empty()) return makeError(Errc::InvalidConfig, "empty directory path");
    std::string cur;
    size_t pos = 0;
    while (pos != std::string::npos) {
        pos = dir.find('/', pos + 1);
        cur = dir.substr(0, pos);
        if (cur.empty()) continue;
        if (::mkdir(cur.c_str(), mode) != 0 && errno != EEXIST) return ioError("mkdir " + cur);
    }
    return {};
}

core::Result<void> writeFileAtomic(const std::string& path, const std::string& data,
                                   unsigned mode) {
    auto slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (!fd) return ioError("create " + tmp);
    ::fchmod(fd.get(), mode);  // umask must not widen or narrow what was asked
    size_t off = 0;
    while (off < data.size()) {
        ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            auto e = ioError("write " + tmp);
            fd.reset();
            ::unlink(tmp.c_str());
            return e;
        }
        off += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0) {
        auto e = ioError("fsync " + tmp);
        fd.reset();
        ::unlink(tmp.c_str());
        return e;
    }
    fd.reset();
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        auto e = ioError("rename " + tmp);
        ::unlink(tmp.c_str());
        return e;
    }
    if (Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); dfd) ::fsync(dfd.get());
    return {};
}

bool writeAtomic(const std::string& path, const std::string& data) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, ".tmp.%d.%016llx", static_cast<int>(::getpid()),
                  static_cast<unsigned long long>(rng()));
    std::string tmp = path + suffix;
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return false;
    bool ok = ::write(fd.get(), data.data(), data.size()) == static_cast<ssize_t>(data.size());
    fd.reset();
    if (ok && ::rename(tmp.c_str(), path.c_str()) == 0) return true;
    ::unlink(tmp.c_str());
    return false;
}

std::optional<std::string> readSmall(const std::string& path, size_t maxBytes) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd) return std::nullopt;
    struct stat st {};
    std::string s;
    bool ok = ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode);
    char buf[16 * 1024];
    ssize_t n = 0;
    while (ok && s.size() <= maxBytes && (n = ::read(fd.get(), buf, sizeof buf)) > 0)
        s.append(buf, static_cast<size_t>(n));
    if (!ok || n < 0 || s.size() > maxBytes) return std::nullopt;
    return s;
}

std::string poolFileName(const std::string& pool) {
    std::string s = pool;
    for (char& c : s)
        if (c == '/') c = '_';
    return s;
}

}  // namespace allot::node_state
