#include "plugin/node_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

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
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
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

constexpr size_t kMaxQueueFile = 64 * 1024;
constexpr size_t kMaxCacheFile = 4u << 20;  // an IPPool is at most etcd's 1.5 MiB

// The whole regular file, or nullopt when it is missing, a symlink or larger than `maxBytes`.
std::optional<std::string> readSmall(const std::string& path, size_t maxBytes) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    struct stat st{};
    std::string s;
    bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    char buf[16 * 1024];
    ssize_t n = 0;
    while (ok && s.size() <= maxBytes && (n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
    ::close(fd);
    if (!ok || n < 0 || s.size() > maxBytes) return std::nullopt;
    return s;
}

// Writes `data` to `path` through a temporary name, so readers see all of it or nothing. A hint
// or a message, not a record: no fsync. The temporary name is unpredictable and created
// exclusively, never through a symlink; the directory is allot's own (0700).
bool writeAtomic(const std::string& path, const std::string& data) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, ".tmp.%d.%016llx", static_cast<int>(::getpid()),
                  static_cast<unsigned long long>(rng()));
    std::string tmp = path + suffix;
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
    ::close(fd);
    if (ok && ::rename(tmp.c_str(), path.c_str()) == 0) return true;
    ::unlink(tmp.c_str());
    return false;
}

class FileCache : public PoolCache {
public:
    explicit FileCache(std::string dir) : dir_(std::move(dir)) {}

    std::optional<store::Pool> load(const std::string& ns, const std::string& pool) override {
        auto text = readSmall(path(ns, pool), kMaxCacheFile);
        if (!text) return std::nullopt;
        auto v = json::parse(*text);
        if (!v) return std::nullopt;
        auto p = store::decodePool(*v);
        if (!p || p->name != pool || p->resourceVersion.empty()) return std::nullopt;
        return *p;
    }
    void save(const std::string& ns, const store::Pool& pool) override {
        // A stale file only costs a Conflict.
        if (store::makeDirs(dir_, 0700))
            (void)writeAtomic(path(ns, pool.name), store::encodePool(pool, "").dump());
    }
    void drop(const std::string& ns, const std::string& pool) override { ::unlink(path(ns, pool).c_str()); }

private:
    // A namespace is a DNS label (no '.'), so "<ns>.<pool>" names one pool.
    std::string path(const std::string& ns, const std::string& pool) const {
        return dir_ + "/" + fileName(ns + "." + pool) + ".cache";
    }
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


// ---- group commit queue ----------------------------------------------------------------

json::Value encodeRequest(const ClaimRequest& r) {
    auto v = json::Value::object();
    v.set("containerId", json::Value::string(r.owner.containerId));
    v.set("podRef", json::Value::string(r.owner.podRef));
    v.set("ifName", json::Value::string(r.owner.ifName));
    v.set("node", json::Value::string(r.owner.node));
    v.set("podUid", json::Value::string(r.owner.podUid));
    v.set("network", json::Value::string(r.owner.network));
    if (r.requested) v.set("requested", json::Value::string(r.requested->str()));
    auto avoid = json::Value::array();
    for (auto off : r.avoid) avoid.push(json::Value::string(core::u128ToString(off)));
    v.set("avoid", std::move(avoid));
    if (r.release) v.set("release", json::Value::boolean(true));
    if (r.window) {
        // The effective window, so the holder picks with this request's constraints.
        auto w = json::Value::object();
        w.set("range", json::Value::string(r.window->cidr().str()));
        w.set("start", json::Value::string(r.window->start().str()));
        w.set("end", json::Value::string(r.window->end().str()));
        auto ex = json::Value::array();
        for (const auto& c : r.window->excludes()) ex.push(json::Value::string(c.str()));
        w.set("exclude", std::move(ex));
        v.set("window", std::move(w));
    }
    if (r.gateway) v.set("gateway", json::Value::string(r.gateway->str()));
    return v;
}

// The window a request was queued with; nullopt when it is malformed.
std::optional<core::IpRange> decodeWindow(const json::Value& w) {
    if (!w.isObject()) return std::nullopt;
    core::RangeSpec spec;
    auto range = w.getString("range");
    auto start = w.getString("start");
    auto end = w.getString("end");
    if (!range || !*range || !start || !*start || !end || !*end) return std::nullopt;
    spec.range = **range;
    spec.rangeStart = **start;
    spec.rangeEnd = **end;
    const json::Value* ex = w.find("exclude");
    if (!ex || !ex->isArray()) return std::nullopt;
    for (const auto& item : ex->items()) {
        if (!item.isString()) return std::nullopt;
        spec.exclude.push_back(item.asString());
    }
    auto r = core::IpRange::fromSpec(spec, "queued window");
    if (!r || r->start().str() != spec.rangeStart || r->end().str() != spec.rangeEnd) return std::nullopt;
    return *r;
}

std::optional<ClaimRequest> decodeRequest(const json::Value& v) {
    if (!v.isObject()) return std::nullopt;
    ClaimRequest r;
    auto str = [&](const char* key, std::string& into) {
        auto s = v.getString(key);
        if (!s) return false;
        into = s->value_or("");
        return true;
    };
    if (!str("containerId", r.owner.containerId) || !str("podRef", r.owner.podRef) ||
        !str("ifName", r.owner.ifName) || !str("node", r.owner.node) || !str("podUid", r.owner.podUid) ||
        !str("network", r.owner.network) || r.owner.containerId.empty())
        return std::nullopt;
    std::string req;
    if (!str("requested", req)) return std::nullopt;
    if (!req.empty()) {
        auto ip = core::IpAddress::parse(req);
        if (!ip) return std::nullopt;
        r.requested = *ip;
    }
    auto release = v.getBool("release");
    if (!release) return std::nullopt;
    r.release = release->value_or(false);
    // A request without its window cannot be served by another process: picking it with the
    // holder's window could put it outside its own config's (an older binary's request).
    const json::Value* w = v.find("window");
    if (!w) return std::nullopt;
    r.window = decodeWindow(*w);
    if (!r.window) return std::nullopt;
    std::string gw;
    if (!str("gateway", gw)) return std::nullopt;
    if (!gw.empty()) {
        auto ip = core::IpAddress::parse(gw);
        if (!ip) return std::nullopt;
        r.gateway = *ip;
    }
    if (const auto* a = v.find("avoid"); a && a->isArray()) {
        for (const auto& item : a->items()) {
            auto off = item.isString() ? core::u128FromString(item.asString()) : std::nullopt;
            if (!off) return std::nullopt;
            r.avoid.push_back(*off);
        }
    }
    return r;
}

const char* kindName(core::PickKind k) {
    switch (k) {
        case core::PickKind::Existing: return "existing";
        case core::PickKind::HandedOver: return "handover";
        case core::PickKind::New: break;
    }
    return "new";
}

json::Value encodeAnswer(const core::Result<core::Pick>& a) {
    auto v = json::Value::object();
    if (a) {
        v.set("ip", json::Value::string(a->ip.str()));
        v.set("offset", json::Value::string(core::u128ToString(a->offset)));
        v.set("kind", json::Value::string(kindName(a->kind)));
    } else {
        v.set("error", json::Value::string(core::errcName(a.code())));
        v.set("message", json::Value::string(a.error().message));
    }
    return v;
}

core::Result<core::Pick> decodeAnswer(const json::Value& v) {
    auto bad = makeError(Errc::Internal, "unreadable answer in the node's claim queue");
    if (!v.isObject()) return bad;
    if (auto e = v.getString("error"); e && *e) {
        auto m = v.getString("message");
        for (int c = 0; c <= static_cast<int>(Errc::Internal); ++c)
            if (**e == core::errcName(static_cast<Errc>(c)))
                return makeError(static_cast<Errc>(c), m && *m ? **m : std::string());
        return bad;
    }
    auto ip = v.getString("ip");
    auto off = v.getString("offset");
    auto kind = v.getString("kind");
    if (!ip || !*ip || !off || !*off || !kind || !*kind) return bad;
    auto addr = core::IpAddress::parse(**ip);
    auto offset = core::u128FromString(**off);
    if (!addr || !offset) return bad;
    for (auto k : {core::PickKind::Existing, core::PickKind::HandedOver, core::PickKind::New})
        if (**kind == kindName(k)) return core::Pick{*addr, *offset, k};
    return bad;
}

class FileTicket : public ClaimQueue::Ticket {
public:
    FileTicket(int fd, std::string dir, std::string id) : fd_(fd), dir_(std::move(dir)), id_(std::move(id)) {}
    ~FileTicket() override {
        // The request goes before the lock is dropped: nobody serves a withdrawn request.
        ::unlink((dir_ + "/" + id_ + ".req").c_str());
        ::unlink((dir_ + "/" + id_ + ".ans").c_str());
        ::close(fd_);
    }
    const std::string& dir() const { return dir_; }
    const std::string& id() const { return id_; }

private:
    int fd_;
    std::string dir_, id_;
};

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void removeIfOld(const std::string& path) {
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0 && st.st_mtime + 60 < ::time(nullptr)) ::unlink(path.c_str());
}

class FileClaimQueue : public ClaimQueue {
public:
    explicit FileClaimQueue(std::string dir) : dir_(std::move(dir)) {}

    core::Result<std::unique_ptr<Ticket>> submit(const std::string& pool, const ClaimRequest& request) override {
        std::string qdir = dir_ + "/" + fileName(pool) + ".q";
        if (auto d = store::makeDirs(qdir, 0700); !d) return d.error();
        static thread_local std::mt19937_64 rng{std::random_device{}()};
        char buf[48];
        std::snprintf(buf, sizeof buf, "%d-%016llx", static_cast<int>(::getpid()),
                      static_cast<unsigned long long>(rng()));
        std::string id = buf, tmp = qdir + "/" + id + ".new";
        // Locked before it is visible under its .req name, so it is never taken for dead.
        int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) return makeError(Errc::Internal, "create " + tmp + ": " + std::strerror(errno));
        std::string data = encodeRequest(request).dump();
        bool ok = ::flock(fd, LOCK_SH) == 0 &&
                  ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()) &&
                  ::rename(tmp.c_str(), (qdir + "/" + id + ".req").c_str()) == 0;
        if (!ok) {
            int err = errno;
            ::unlink(tmp.c_str());
            ::close(fd);
            return makeError(Errc::Internal, "queue request in " + qdir + ": " + std::strerror(err));
        }
        return std::unique_ptr<Ticket>(new FileTicket(fd, qdir, id));
    }

    std::optional<core::Result<core::Pick>> answered(Ticket& ticket) override {
        auto& t = static_cast<FileTicket&>(ticket);
        auto text = readSmall(t.dir() + "/" + t.id() + ".ans", kMaxQueueFile);
        if (!text) return std::nullopt;
        auto v = json::parse(*text);
        if (!v) return core::Result<core::Pick>(makeError(Errc::Internal, "unreadable answer in the node's claim queue"));
        return decodeAnswer(*v);
    }

    std::vector<Waiting> waiting(Ticket& self, size_t max) override {
        auto& t = static_cast<FileTicket&>(self);
        std::vector<Waiting> out;
        DIR* d = ::opendir(t.dir().c_str());
        if (!d) return out;
        std::vector<std::string> names;
        while (dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
        ::closedir(d);
        std::sort(names.begin(), names.end());  // roughly first come, first served
        auto has = [&](const std::string& n) { return std::binary_search(names.begin(), names.end(), n); };
        for (const auto& n : names) {
            if (out.size() >= max) break;
            const bool orphanAnswer = endsWith(n, ".ans") && !has(n.substr(0, n.size() - 4) + ".req");
            if (endsWith(n, ".new") || n.find(".tmp.") != std::string::npos || orphanAnswer) {
                removeIfOld(t.dir() + "/" + n);  // left by a process killed mid-way
                continue;
            }
            if (!endsWith(n, ".req")) continue;
            std::string id = n.substr(0, n.size() - 4);
            if (id == t.id() || has(id + ".ans")) continue;
            std::string path = t.dir() + "/" + n;
            int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            if (fd < 0) continue;
            if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
                ::unlink(path.c_str());  // its process is gone
                ::close(fd);
                continue;
            }
            ::close(fd);
            auto text = readSmall(path, kMaxQueueFile);
            auto v = text ? json::parse(*text) : core::Result<json::Value>(makeError(Errc::Decode, ""));
            auto r = v ? decodeRequest(*v) : std::nullopt;
            if (!r) {
                // Unreadable: answer it, so its process stops waiting for service.
                answer(self, id, makeError(Errc::Internal, "unreadable request in the node's claim queue " + path));
                continue;
            }
            out.push_back({id, std::move(*r)});
        }
        return out;
    }

    void answer(Ticket& self, const std::string& id, const core::Result<core::Pick>& a) override {
        auto& t = static_cast<FileTicket&>(self);
        (void)writeAtomic(t.dir() + "/" + id + ".ans", encodeAnswer(a).dump());
    }

private:
    std::string dir_;
};

}  // namespace

std::unique_ptr<ClaimQueue> makeFileClaimQueue(const std::string& dir) {
    return std::make_unique<FileClaimQueue>(dir);
}
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
