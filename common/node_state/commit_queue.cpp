#include "node_state/commit_queue.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>

#include "json/json.h"
#include "node_state/files.h"
#include "sys/fd.h"

namespace allot::node_state {

using engine::CommitQueue;
using engine::CommitRequest;

using sys::Fd;

using core::Errc;
using core::makeError;

namespace {

constexpr size_t kMaxQueueFile = 64 * 1024;

json::Value encodeRequest(const CommitRequest& r) {
    auto v = json::Value::object();
    v.set("containerId", json::Value::string(r.owner.containerId));
    v.set("podRef", json::Value::string(r.owner.podRef));
    v.set("ifName", json::Value::string(r.owner.ifName));
    v.set("node", json::Value::string(r.owner.node));
    v.set("podUid", json::Value::string(r.owner.podUid));
    v.set("network", json::Value::string(r.owner.network));
    if (!r.owner.claim.empty()) v.set("claim", json::Value::string(r.owner.claim));
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
    if (r.cooldownS > 0) v.set("cooldownS", json::Value::number(r.cooldownS));
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
    if (!r || r->start().str() != spec.rangeStart || r->end().str() != spec.rangeEnd)
        return std::nullopt;
    return *r;
}

std::optional<CommitRequest> decodeRequest(const json::Value& v) {
    if (!v.isObject()) return std::nullopt;
    CommitRequest r;
    auto str = [&](const char* key, std::string& into) {
        auto s = v.getString(key);
        if (!s) return false;
        into = s->value_or("");
        return true;
    };
    if (!str("containerId", r.owner.containerId) || !str("podRef", r.owner.podRef) ||
        !str("ifName", r.owner.ifName) || !str("node", r.owner.node) ||
        !str("podUid", r.owner.podUid) || !str("network", r.owner.network) ||
        r.owner.containerId.empty())
        return std::nullopt;
    if (!str("claim", r.owner.claim)) return std::nullopt;
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
    if (const auto* c = v.find("cooldownS"); c && !c->isNull()) {
        auto n = c->asInt();
        if (!n || *n < 0) return std::nullopt;
        r.cooldownS = *n;
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
        case core::PickKind::Existing:
            return "existing";
        case core::PickKind::HandedOver:
            return "handover";
        case core::PickKind::Shared:
            return "shared";
        case core::PickKind::New:
            break;
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
    auto bad = makeError(Errc::Internal, "unreadable answer in the node's commit queue");
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
    for (auto k : {core::PickKind::Existing, core::PickKind::HandedOver, core::PickKind::Shared,
                   core::PickKind::New})
        if (**kind == kindName(k)) return core::Pick{*addr, *offset, k};
    return bad;
}

class FileTicket : public CommitQueue::Ticket {
  public:
    FileTicket(Fd fd, std::string dir, std::string id)
        : fd_(std::move(fd)), dir_(std::move(dir)), id_(std::move(id)) {}
    ~FileTicket() override {
        // The request goes before the lock is dropped (fd_ closes after this body): nobody
        // serves a withdrawn request.
        for (const char* ext : {".req", ".taken", ".ans"})
            ::unlink((dir_ + "/" + id_ + ext).c_str());
    }
    const std::string& dir() const { return dir_; }
    const std::string& id() const { return id_; }

  private:
    Fd fd_;
    std::string dir_, id_;
};

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void removeIfOld(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && st.st_mtime + 60 < ::time(nullptr))
        ::unlink(path.c_str());
}

class FileClaimQueue : public CommitQueue {
  public:
    explicit FileClaimQueue(std::string dir) : dir_(std::move(dir)) {}

    core::Result<std::unique_ptr<Ticket>> submit(const std::string& pool,
                                                 const CommitRequest& request) override {
        std::string qdir = dir_ + "/" + poolFileName(pool) + ".q";
        if (auto d = makeDirs(qdir, 0700); !d) return d.error();
        static thread_local std::mt19937_64 rng{std::random_device{}()};
        char buf[48];
        std::snprintf(buf, sizeof buf, "%d-%016llx", static_cast<int>(::getpid()),
                      static_cast<unsigned long long>(rng()));
        std::string id = buf, tmp = qdir + "/" + id + ".new";
        // Locked before it is visible under its .req name, so it is never taken for dead.
        Fd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
        if (!fd) return makeError(Errc::Internal, "create " + tmp + ": " + std::strerror(errno));
        std::string data = encodeRequest(request).dump();
        bool ok =
            ::flock(fd.get(), LOCK_SH) == 0 &&
            ::write(fd.get(), data.data(), data.size()) == static_cast<ssize_t>(data.size()) &&
            ::rename(tmp.c_str(), (qdir + "/" + id + ".req").c_str()) == 0;
        if (!ok) {
            int err = errno;
            ::unlink(tmp.c_str());
            return makeError(Errc::Internal,
                             "queue request in " + qdir + ": " + std::strerror(err));
        }
        return std::unique_ptr<Ticket>(new FileTicket(std::move(fd), qdir, id));
    }

    std::optional<core::Result<core::Pick>> answered(Ticket& ticket) override {
        auto& t = static_cast<FileTicket&>(ticket);
        auto text = readSmall(t.dir() + "/" + t.id() + ".ans", kMaxQueueFile);
        if (!text) return std::nullopt;
        auto v = json::parse(*text);
        if (!v)
            return core::Result<core::Pick>(
                makeError(Errc::Internal, "unreadable answer in the node's commit queue"));
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
        auto has = [&](const std::string& n) {
            return std::binary_search(names.begin(), names.end(), n);
        };
        for (const auto& n : names) {
            if (out.size() >= max) break;
            const std::string stem = n.substr(0, n.rfind('.'));
            const bool orphanAnswer =
                endsWith(n, ".ans") && !has(stem + ".req") && !has(stem + ".taken");
            if (endsWith(n, ".new") || n.find(".tmp.") != std::string::npos || orphanAnswer) {
                removeIfOld(t.dir() + "/" + n);  // left by a process killed mid-way
                continue;
            }
            if (endsWith(n, ".taken") && stem != t.id()) {
                dropIfGone(t.dir() + "/" + stem);  // taken, then its process was killed
                continue;
            }
            if (!endsWith(n, ".req") || stem == t.id() || has(stem + ".ans")) continue;
            if (auto w = take(self, stem)) out.push_back(std::move(*w));
        }
        return out;
    }

    void answer(Ticket& self, const std::string& id, const core::Result<core::Pick>& a) override {
        auto& t = static_cast<FileTicket&>(self);
        (void)writeAtomic(t.dir() + "/" + id + ".ans", encodeAnswer(a).dump());
    }

    void giveBack(Ticket& self, const std::vector<std::string>& ids) override {
        auto& t = static_cast<FileTicket&>(self);
        for (const auto& id : ids) {
            const std::string base = t.dir() + "/" + id;
            ::rename((base + ".taken").c_str(), (base + ".req").c_str());
        }
    }

    bool withdraw(Ticket& ticket) override {
        auto& t = static_cast<FileTicket&>(ticket);
        // The holder takes a request by renaming it: exactly one of the two wins.
        return ::unlink((t.dir() + "/" + t.id() + ".req").c_str()) == 0;
    }

  private:
    // Request `id` taken (renamed to <id>.taken, so its process can no longer withdraw it), or
    // nullopt: withdrawn meanwhile, its process gone, or unreadable (then answered).
    std::optional<Waiting> take(Ticket& self, const std::string& id) {
        auto& t = static_cast<FileTicket&>(self);
        const std::string base = t.dir() + "/" + id, path = base + ".taken";
        if (::rename((base + ".req").c_str(), path.c_str()) != 0) return std::nullopt;
        if (dropIfGone(base)) return std::nullopt;
        auto text = readSmall(path, kMaxQueueFile);
        auto v = text ? json::parse(*text) : core::Result<json::Value>(makeError(Errc::Decode, ""));
        auto r = v ? decodeRequest(*v) : std::nullopt;
        if (!r) {
            // Unreadable: answer it, so its process stops waiting for service.
            answer(self, id,
                   makeError(Errc::Internal,
                             "unreadable request in the node's commit queue " + base + ".req"));
            return std::nullopt;
        }
        return Waiting{id, std::move(*r)};
    }

    // Removes taken request `base` and its answer when no process holds it any more (its
    // requester holds a shared lock on it while it waits). True when it was gone.
    static bool dropIfGone(const std::string& base) {
        const std::string path = base + ".taken";
        Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd) return true;  // gone already
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false;
        ::unlink(path.c_str());  // its process is gone (unlinked before the lock drops)
        ::unlink((base + ".ans").c_str());
        return true;
    }

    std::string dir_;
};

}  // namespace

std::unique_ptr<CommitQueue> makeFileCommitQueue(const std::string& dir) {
    return std::make_unique<FileClaimQueue>(dir);
}

}  // namespace allot::node_state
