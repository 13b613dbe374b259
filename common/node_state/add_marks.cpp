#include "node_state/add_marks.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "node_state/files.h"
#include "sys/fd.h"

namespace allot::node_state {

namespace {

// A container ID the CNI spec allows is its own file name; any other string (an entry of a
// pool is an API object anyone with write access shaped) is named by its hash, so a name never
// leaves the directory. Two IDs sharing a hash only make one look marked: held, never freed.
std::string fileName(const std::string& id) {
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    bool plain = !id.empty() && id.size() <= 200 && alnum(id[0]);
    for (char c : id)
        if (!alnum(c) && c != '_' && c != '.' && c != '-') plain = false;
    if (plain) return id;
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : id) h = (h ^ c) * 1099511628211ULL;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return std::string("~") + hex;
}

std::chrono::system_clock::time_point mtimeOf(const struct stat& st) {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) +
            std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

}  // namespace

std::string FileAddMarks::path(const std::string& containerId) const {
    return dir_ + "/" + fileName(containerId);
}

core::Result<void> FileAddMarks::mark(const std::string& containerId) {
    const std::string p = path(containerId);
    auto open = [&] {
        return sys::Fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    };
    sys::Fd fd = open();
    if (!fd && errno == ENOENT) {
        if (auto d = makeDirs(dir_, 0700); !d) return d.error();
        fd = open();
    }
    if (!fd) return ioError("create " + p);
    // The mark's age is its mtime: an ADD again for the same container starts it anew.
    if (::futimens(fd.get(), nullptr) != 0) return ioError("touch " + p);
    return {};
}

void FileAddMarks::unmark(const std::string& containerId) {
    ::unlink(path(containerId).c_str());
}

core::Result<std::optional<std::chrono::milliseconds>> FileAddMarks::age(
    const std::string& containerId, std::chrono::system_clock::time_point now) const {
    struct stat st {};
    const std::string p = path(containerId);
    if (::lstat(p.c_str(), &st) != 0) {
        if (errno == ENOENT) return std::optional<std::chrono::milliseconds>();
        return ioError("stat " + p);
    }
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - mtimeOf(st));
    return std::optional<std::chrono::milliseconds>(std::max(age, std::chrono::milliseconds(0)));
}

size_t FileAddMarks::prune(std::chrono::milliseconds bound,
                           std::chrono::system_clock::time_point now, size_t limit) {
    sys::Fd dirFd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dirFd) return 0;
    DIR* d = ::fdopendir(dirFd.release());
    if (!d) return 0;
    size_t removed = 0, seen = 0;
    while (const dirent* e = ::readdir(d)) {
        if (++seen > limit) break;
        const std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        struct stat st {};
        if (::fstatat(::dirfd(d), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (now - mtimeOf(st) < bound) continue;
        if (::unlinkat(::dirfd(d), n.c_str(), 0) == 0) ++removed;
    }
    ::closedir(d);
    return removed;
}

}  // namespace allot::node_state
