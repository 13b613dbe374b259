#include "plugin/node_files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "store/journal.h"
#include "store/pool_codec.h"

namespace allot::plugin {

using core::Errc;
using core::makeError;

namespace {

void onAlarm(int) {}

std::string fileName(const std::string& pool) {
    std::string s = pool;
    for (char& c : s)
        if (c == '/') c = '_';
    return s;
}

class FileGuard : public PoolLocker::Guard {
public:
    explicit FileGuard(int fd) : fd_(fd) {}
    ~FileGuard() override {
        ::flock(fd_, LOCK_UN);
        ::close(fd_);
    }

private:
    int fd_;
};

class FileLocker : public PoolLocker {
public:
    explicit FileLocker(std::string dir) : dir_(std::move(dir)) {}

    core::Result<std::unique_ptr<Guard>> acquire(const std::string& pool,
                                                 Clock::time_point deadline) override {
        if (auto d = store::makeDirs(dir_, 0700); !d) return d.error();
        std::string path = dir_ + "/" + fileName(pool) + ".lock";
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) return makeError(Errc::Internal, "open lock " + path + ": " + std::strerror(errno));
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return std::unique_ptr<Guard>(new FileGuard(fd));
        // Contended: block, with SIGALRM (installed without SA_RESTART) bounding the wait.
        auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            ::close(fd);
            return makeError(Errc::Transient, "timed out waiting for the node lock " + path);
        }
        struct sigaction sa{}, old{};
        sa.sa_handler = onAlarm;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGALRM, &sa, &old);
        itimerval t{};
        if (deadline != Clock::time_point::max()) {
            t.it_value.tv_sec = static_cast<time_t>(left.count() / 1000000);
            t.it_value.tv_usec = static_cast<suseconds_t>(left.count() % 1000000);
        }
        ::setitimer(ITIMER_REAL, &t, nullptr);
        int rc = ::flock(fd, LOCK_EX);
        int err = errno;
        itimerval off{};
        ::setitimer(ITIMER_REAL, &off, nullptr);
        ::sigaction(SIGALRM, &old, nullptr);
        if (rc == 0) return std::unique_ptr<Guard>(new FileGuard(fd));
        ::close(fd);
        if (err == EINTR) return makeError(Errc::Transient, "timed out waiting for the node lock " + path);
        return makeError(Errc::Internal, "lock " + path + ": " + std::strerror(err));
    }

private:
    std::string dir_;
};

class FileCache : public PoolCache {
public:
    explicit FileCache(std::string dir) : dir_(std::move(dir)) {}

    std::optional<store::Pool> load(const std::string& pool) override {
        std::ifstream in(path(pool), std::ios::binary);
        if (!in) return std::nullopt;
        std::stringstream ss;
        ss << in.rdbuf();
        auto v = json::parse(ss.str());
        if (!v) return std::nullopt;
        auto p = store::decodePool(*v);
        if (!p || p->name != pool || p->resourceVersion.empty()) return std::nullopt;
        return *p;
    }
    void save(const store::Pool& pool) override {
        if (!store::makeDirs(dir_, 0700)) return;
        // A hint, not a record: no fsync. A torn or stale file only costs a Conflict.
        std::string p = path(pool.name), tmp = p + ".tmp." + std::to_string(::getpid());
        int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) return;
        std::string data = store::encodePool(pool, "").dump();
        bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
        ::close(fd);
        if (!ok || ::rename(tmp.c_str(), p.c_str()) != 0) ::unlink(tmp.c_str());
    }
    void drop(const std::string& pool) override { ::unlink(path(pool).c_str()); }

private:
    std::string path(const std::string& pool) const { return dir_ + "/" + fileName(pool) + ".cache"; }
    std::string dir_;
};

class FileJournal : public ReleaseJournal {
public:
    explicit FileJournal(std::string dir) : journal_(std::move(dir)) {}
    core::Result<void> record(const JournalEntry& e) override {
        return journal_.append({e.poolNamespace, e.pools, e.networkName, e.containerId, e.ifName,
                                e.podRef, e.node, "", e.reservations});
    }

private:
    store::Journal journal_;
};

std::string firstLine(const std::string& path) {
    std::ifstream in(path);
    if (!in) return "";
    char buf[1025] = {};
    in.read(buf, 1024);
    std::string s(buf, static_cast<size_t>(in.gcount()));
    auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

std::string dirOf(const std::string& path) {
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path;
    auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

std::unique_ptr<PoolLocker> makeFileLocker(const std::string& dir) { return std::make_unique<FileLocker>(dir); }
std::unique_ptr<PoolCache> makeFileCache(const std::string& dir) { return std::make_unique<FileCache>(dir); }
std::unique_ptr<ReleaseJournal> makeFileJournal(const std::string& dir) {
    return std::make_unique<FileJournal>(dir);
}

std::string lookupNodeName(const std::string& envNodeName, const std::string& flatFile,
                           const std::string& configurationPath) {
    auto trim = [](std::string s) {
        auto b = s.find_first_not_of(" \t\r\n");
        if (b == std::string::npos) return std::string();
        return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
    };
    if (auto n = trim(envNodeName); !n.empty()) return n;
    std::vector<std::string> files;
    if (!configurationPath.empty()) files.push_back(dirOf(configurationPath) + "/nodename");
    if (!flatFile.empty()) files.push_back(dirOf(flatFile) + "/nodename");
    files.push_back("/etc/cni/net.d/allot.d/nodename");
    files.push_back("/etc/cni/net.d/whereabouts.d/nodename");
    for (const auto& f : files)
        if (auto n = firstLine(f); !n.empty()) return n;
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) return host;
    return "";
}

}  // namespace allot::plugin
