#include "store/journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "json/json.h"

namespace allot::store {

using core::Errc;
using core::makeError;

namespace {

core::Error ioError(const std::string& what) {
    return makeError(Errc::Internal, what + ": " + std::strerror(errno));
}

}  // namespace

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

core::Result<void> writeFileAtomic(const std::string& path, const std::string& data, unsigned mode) {
    auto slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return ioError("create " + tmp);
    ::fchmod(fd, mode);  // umask must not widen or narrow what was asked
    size_t off = 0;
    while (off < data.size()) {
        ssize_t n = ::write(fd, data.data() + off, data.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            auto e = ioError("write " + tmp);
            ::close(fd);
            ::unlink(tmp.c_str());
            return e;
        }
        off += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
        auto e = ioError("fsync " + tmp);
        ::close(fd);
        ::unlink(tmp.c_str());
        return e;
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        auto e = ioError("rename " + tmp);
        ::unlink(tmp.c_str());
        return e;
    }
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return {};
}

core::Result<void> Journal::append(const JournalRecord& r) {
    if (auto d = makeDirs(dir_, 0700); !d) return d;
    json::Value v = json::Value::object();
    v.set("version", json::Value::number(1));
    v.set("namespace", json::Value::string(r.poolNamespace));
    json::Value pools = json::Value::array();
    for (const auto& p : r.pools) pools.push(json::Value::string(p));
    v.set("pools", std::move(pools));
    v.set("networkName", json::Value::string(r.networkName));
    v.set("containerID", json::Value::string(r.containerId));
    v.set("ifname", json::Value::string(r.ifName));
    v.set("podref", json::Value::string(r.podRef));
    v.set("node", json::Value::string(r.node));
    json::Value res = json::Value::array();
    for (const auto& n : r.reservations) res.push(json::Value::string(n));
    v.set("reservations", std::move(res));
    auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    v.set("time", json::Value::number(now));
    std::string name = dir_ + "/" + std::to_string(now) + "-" + r.containerId.substr(0, 64) + "-" +
                       r.ifName + ".json";
    return writeFileAtomic(name, v.dump() + "\n", 0600);
}

core::Result<std::vector<JournalRecord>> Journal::entries(std::vector<std::string>* bad) const {
    std::vector<JournalRecord> out;
    DIR* d = ::opendir(dir_.c_str());
    if (!d) {
        if (errno == ENOENT) return out;
        return ioError("open journal " + dir_);
    }
    std::vector<std::string> names;
    while (dirent* ent = ::readdir(d)) {
        std::string n = ent->d_name;
        if (n.size() > 5 && n.ends_with(".json")) names.push_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
        std::string path = dir_ + "/" + n;
        std::ifstream in(path);
        std::stringstream ss;
        ss << in.rdbuf();
        auto v = json::parse(ss.str(), {1 << 20, 8});
        auto reject = [&](const std::string& why) {
            if (bad) bad->push_back(path + ": " + why);
        };
        if (!v || !v->isObject()) {
            reject(v ? "not an object" : v.error().message);
            continue;
        }
        JournalRecord r;
        r.file = path;
        auto s = [&](const char* k) {
            const json::Value* x = v->find(k);
            return x && x->isString() ? x->asString() : std::string();
        };
        r.poolNamespace = s("namespace");
        r.networkName = s("networkName");
        r.containerId = s("containerID");
        r.ifName = s("ifname");
        r.podRef = s("podref");
        r.node = s("node");
        if (const json::Value* p = v->find("pools"); p && p->isArray())
            for (const auto& x : p->items())
                if (x.isString()) r.pools.push_back(x.asString());
        if (const json::Value* p = v->find("reservations"); p && p->isArray())
            for (const auto& x : p->items())
                if (x.isString()) r.reservations.push_back(x.asString());
        if (r.containerId.empty() || r.ifName.empty()) {
            reject("missing containerID or ifname");
            continue;
        }
        out.push_back(std::move(r));
    }
    return out;
}

core::Result<void> Journal::remove(const JournalRecord& r) {
    if (::unlink(r.file.c_str()) != 0 && errno != ENOENT) return ioError("remove " + r.file);
    return {};
}

}  // namespace allot::store
