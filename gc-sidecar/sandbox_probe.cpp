#include "gc-sidecar/sandbox_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "sys/fd.h"

namespace allot::gc {

using core::Errc;
using core::makeError;

namespace {

constexpr size_t kMaxNamespaces = 8192;

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
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

core::Result<ProbeReport> probeNodeAddresses(const std::vector<std::string>& netnsDirs,
                                             const std::string& procDir) {
    std::vector<std::string> paths;
    auto scanDir = [&](const std::string& dir, bool proc) {
        DIR* d = ::opendir(dir.c_str());
        if (!d) return;
        while (dirent* e = ::readdir(d)) {
            std::string n = e->d_name;
            if (n == "." || n == "..") continue;
            if (proc) {
                if (n.find_first_not_of("0123456789") != std::string::npos) continue;
                paths.push_back(dir + "/" + n + "/ns/net");
            } else {
                paths.push_back(dir + "/" + n);
            }
            if (paths.size() > 4 * kMaxNamespaces) break;
        }
        ::closedir(d);
    };
    for (const auto& d : netnsDirs) scanDir(d, false);
    scanDir(procDir, true);

    struct stat self {};
    if (::stat((procDir + "/self/ns/net").c_str(), &self) != 0)
        return makeError(Errc::Internal,
                         "cannot stat " + procDir + "/self/ns/net: " + std::strerror(errno));
    std::set<std::pair<dev_t, ino_t>> seen{{self.st_dev, self.st_ino}};
    std::vector<sys::Fd> fds;
    for (const auto& p : paths) {
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0) continue;  // a process that just ended
        if (!seen.insert({st.st_dev, st.st_ino}).second) continue;
        sys::Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd) continue;
        fds.push_back(std::move(fd));
        if (fds.size() >= kMaxNamespaces) break;
    }

    // setns changes only the calling thread: a thread of its own, which then ends.
    ProbeReport rep;
    std::string failure;
    std::thread t([&] {
        for (const auto& fd : fds) {
            if (::setns(fd.get(), CLONE_NEWNET) != 0) {
                failure = std::string("setns: ") + std::strerror(errno) +
                          " (reading the node's network namespaces needs CAP_SYS_ADMIN)";
                return;
            }
            ++rep.namespaces;
            for (const auto& ip :
                 localAddressesFromFibTrie(slurp("/proc/thread-self/net/fib_trie")))
                rep.addresses.insert(ip);
            for (const auto& ip : addressesFromIfInet6(slurp("/proc/thread-self/net/if_inet6")))
                rep.addresses.insert(ip);
        }
    });
    t.join();
    if (!failure.empty()) return makeError(Errc::Internal, failure);
    return rep;
}

}  // namespace allot::gc
