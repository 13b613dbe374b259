#include "node_state/journal.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "json/json.h"
#include "node_state/files.h"

namespace allot::node_state {

using engine::JournalEntry;
using engine::ReleaseJournal;

core::Result<void> Journal::append(const JournalEntry& r) {
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

core::Result<std::vector<JournalEntry>> Journal::entries(std::vector<std::string>* bad) const {
    std::vector<JournalEntry> out;
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
        JournalEntry r;
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

core::Result<void> Journal::remove(const JournalEntry& r) {
    if (::unlink(r.file.c_str()) != 0 && errno != ENOENT) return ioError("remove " + r.file);
    return {};
}

std::unique_ptr<ReleaseJournal> makeFileJournal(const std::string& dir) {
    return std::make_unique<Journal>(dir);
}

}  // namespace allot::node_state
