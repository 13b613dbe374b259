#include "gc-sidecar/node/sandbox_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "sys/fd.h"

namespace allot::gc {

using core::Errc;
using core::makeError;

namespace {

std::string errnoText(const std::string& what, const std::string& path, int err) {
    return what + " " + path + ": " + std::strerror(err);
}

// A process that ended (or a name removed from a netns directory) between the listing and the
// look: its namespace is not held through it any more.
bool gone(int err) {
    return err == ENOENT || err == ESRCH;
}

// The whole file. `absentIsEmpty`: a file that does not exist reads as empty.
core::Result<std::string> readFile(const std::string& path, bool absentIsEmpty) {
    sys::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd && absentIsEmpty && errno == ENOENT) return std::string();
    if (!fd) return makeError(Errc::Internal, errnoText("cannot open", path, errno));
    std::string out;
    char buf[16384];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return makeError(Errc::Internal, errnoText("cannot read", path, errno));
        if (n == 0) return out;
        out.append(buf, static_cast<size_t>(n));
    }
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t|-+`");
    if (b == std::string::npos) return {};
    size_t e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

}  // namespace

std::set<core::IpAddress> localAddressesFromFibTrie(const std::string& text) {
    // Each leaf is "|-- a.b.c.d" followed by its routes, one "/32 host LOCAL" for an
    // address of the namespace.
    std::set<core::IpAddress> out;
    std::istringstream in(text);
    std::string line, last;
    while (std::getline(in, line)) {
        if (line.find("|--") != std::string::npos) {
            last = trim(line);
        } else if (line.find("/32 host LOCAL") != std::string::npos && !last.empty()) {
            if (auto ip = core::IpAddress::parse(last)) out.insert(*ip);
        }
    }
    return out;
}

std::set<core::IpAddress> addressesFromIfInet6(const std::string& text) {
    std::set<core::IpAddress> out;
    std::istringstream in(text);
    std::string hex;
    std::string rest;
    while (in >> hex) {
        std::getline(in, rest);
        if (hex.size() != 32) continue;
        std::string colon;
        for (size_t i = 0; i < 32; i += 4) colon += (i ? ":" : "") + hex.substr(i, 4);
        if (auto ip = core::IpAddress::parse(colon)) out.insert(*ip);
    }
    return out;
}

namespace {

// Appends the namespace paths `dir` lists (for procDir, each process's ns/net) to `paths`.
core::Result<void> scanDir(const std::string& dir, bool proc, size_t maxEntries,
                           std::vector<std::string>& paths) {
    DIR* d = ::opendir(dir.c_str());
    if (!d && !proc && errno == ENOENT) return core::success();  // no such runtime here
    if (!d) return makeError(Errc::Internal, errnoText("cannot list", dir, errno));
    std::string failure;
    for (;;) {
        errno = 0;
        const dirent* e = ::readdir(d);
        if (!e) {
            if (errno != 0) failure = errnoText("cannot list", dir, errno);
            break;
        }
        const std::string n = e->d_name;
        if (n == "." || n == ".." ||
            (proc && n.find_first_not_of("0123456789") != std::string::npos))
            continue;
        if (paths.size() >= maxEntries) {
            ::closedir(d);
            return makeError(Errc::TooLarge, "more than " + std::to_string(maxEntries) +
                                                 " netns directory entries and processes (at " +
                                                 dir +
                                                 "): the namespaces past them cannot be seen");
        }
        paths.push_back(proc ? dir + "/" + n + "/ns/net" : dir + "/" + n);
    }
    ::closedir(d);
    if (!failure.empty()) return makeError(Errc::Internal, failure);
    return core::success();
}

struct Namespaces {
    std::vector<std::pair<std::string, sys::Fd>> fds;
    // Processes whose ns/net link this process may not follow (another process's ptrace
    // rules): their namespace's addresses are read through /proc/<pid>/net instead.
    std::vector<std::string> procNetDirs;
};

// "/proc/123/ns/net" -> "/proc/123/net"; "" for a path that is not a process's.
std::string procNetDir(const std::string& nsPath) {
    static const std::string kSuffix = "/ns/net";
    if (nsPath.size() <= kSuffix.size() ||
        nsPath.compare(nsPath.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
        return {};
    return nsPath.substr(0, nsPath.size() - kSuffix.size()) + "/net";
}

// One path and open descriptor per distinct namespace of `paths`, the node's own (`self`) left
// out.
core::Result<Namespaces> openNamespaces(const std::vector<std::string>& paths,
                                        const struct stat& self, size_t maxNamespaces) {
    std::set<std::pair<dev_t, ino_t>> seen{{self.st_dev, self.st_ino}};
    Namespaces out;
    auto& fds = out.fds;
    for (const auto& p : paths) {
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0) {
            if (gone(errno)) continue;
            if (errno == EACCES && !procNetDir(p).empty()) {
                out.procNetDirs.push_back(procNetDir(p));
                continue;
            }
            return makeError(Errc::Internal, errnoText("cannot stat", p, errno));
        }
        if (!seen.insert({st.st_dev, st.st_ino}).second) continue;
        if (fds.size() >= maxNamespaces)
            return makeError(Errc::TooLarge, "more than " + std::to_string(maxNamespaces) +
                                                 " network namespaces on this node");
        sys::Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd && gone(errno)) continue;
        if (!fd) return makeError(Errc::Internal, errnoText("cannot open", p, errno));
        fds.emplace_back(p, std::move(fd));
    }
    return out;
}

// The addresses of the namespace the calling thread is in.
core::Result<void> readAddresses(const std::string& netDir, ProbeReport& rep) {
    auto trie = readFile(netDir + "/fib_trie", false);
    if (!trie) return trie.error();
    // No if_inet6: a kernel without IPv6 (ipv6.disable=1), where no namespace has an address.
    auto inet6 = readFile(netDir + "/if_inet6", true);
    if (!inet6) return inet6.error();
    for (const auto& ip : localAddressesFromFibTrie(*trie)) rep.addresses.insert(ip);
    for (const auto& ip : addressesFromIfInet6(*inet6)) rep.addresses.insert(ip);
    return core::success();
}

}  // namespace

core::Result<ProbeReport> probeNodeAddresses(const std::vector<std::string>& netnsDirs,
                                             const std::string& procDir,
                                             const ProbeOptions& options) {
    std::vector<std::string> paths;
    for (const auto& d : netnsDirs)
        if (auto r = scanDir(d, false, options.maxEntries, paths); !r) return r.error();
    if (auto r = scanDir(procDir, true, options.maxEntries, paths); !r) return r.error();

    struct stat self {};
    if (::stat((procDir + "/self/ns/net").c_str(), &self) != 0)
        return makeError(Errc::Internal, errnoText("cannot stat", procDir + "/self/ns/net", errno));
    auto fds = openNamespaces(paths, self, options.maxNamespaces);
    if (!fds) return fds.error();

    // setns changes only the calling thread: a thread of its own, which then ends.
    ProbeReport rep;
    core::Result<void> done = core::success();
    std::thread t([&] {
        for (const auto& [path, fd] : fds->fds) {
            if (::setns(fd.get(), CLONE_NEWNET) != 0) {
                done =
                    makeError(Errc::Internal, std::string("setns: ") + std::strerror(errno) +
                                                  " (reading the node's network namespaces needs "
                                                  "CAP_SYS_ADMIN)");
                return;
            }
            ++rep.namespaces;
            if (done = readAddresses(options.netDir, rep); !done) {
                done = makeError(done.code(), "namespace " + path + ": " + done.error().message);
                return;
            }
        }
    });
    t.join();
    if (!done) return done.error();
    for (const auto& dir : fds->procNetDirs) {
        if (::access(dir.c_str(), F_OK) != 0 && gone(errno)) continue;  // the process ended
        if (auto r = readAddresses(dir, rep); !r)
            return makeError(r.code(), "process namespace " + dir + ": " + r.error().message);
        ++rep.namespaces;
    }
    return rep;
}

}  // namespace allot::gc
