#include "plugin/node_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "json/json.h"

namespace allot::plugin {

using core::Errc;
using core::makeError;

namespace {

constexpr size_t kMaxFlatFile = 1 << 20;

// Absolute, no empty, "." or ".." component; trailing '/' dropped. "" when not.
std::string normalise(const std::string& path) {
    if (path.empty() || path[0] != '/' || path.size() > PATH_MAX) return "";
    std::string out;
    size_t pos = 1;
    while (pos <= path.size()) {
        size_t slash = path.find('/', pos);
        if (slash == std::string::npos) slash = path.size();
        std::string part = path.substr(pos, slash - pos);
        pos = slash + 1;
        if (part.empty()) continue;  // "//" and a trailing '/'
        if (part == "." || part == "..") return "";
        out += "/" + part;
    }
    return out.empty() ? "/" : out;
}

bool lexicallyUnder(const std::string& path, const std::string& root) {
    if (root == "/") return true;
    return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                            path[root.size()] == '/');
}

// The path with its deepest existing ancestor's symlinks resolved.
std::string resolved(const std::string& path) {
    std::string head = path, tail;
    for (;;) {
        char buf[PATH_MAX];
        if (::realpath(head.c_str(), buf)) {
            std::string r = buf;
            return r == "/" ? (tail.empty() ? r : tail) : r + tail;
        }
        auto slash = head.rfind('/');
        if (slash == std::string::npos || head == "/") return "";
        tail = head.substr(slash) + tail;
        head = slash == 0 ? "/" : head.substr(0, slash);
    }
}

std::string dirName(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return "";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::optional<json::Value> readFlat(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (text.size() > kMaxFlatFile) return std::nullopt;
    auto v = json::parse(text);
    if (!v || !v->isObject()) return std::nullopt;
    return *v;
}

std::string stringKey(const json::Value& v, const char* key) {
    const json::Value* f = v.find(key);
    return f && f->isString() ? f->asString() : std::string();
}

void addRoot(NodeRoots& r, const std::string& dir) {
    std::string n = normalise(dir);
    if (n.empty() || n == "/") return;  // "/" would allow everything: not a root
    for (const auto& d : r.dirs)
        if (d == n) return;
    r.dirs.push_back(n);
}

core::Result<void> outside(const char* key, const std::string& path, const NodeRoots& roots) {
    return makeError(Errc::InvalidConfig,
                     std::string("\"") + key + "\" \"" + path +
                         "\" is outside the directories allot may use on the node (" +
                         roots.describe() +
                         "); the node's admin can name more in the flat file's \"node_dirs\"");
}

// A lock or journal dir that exists must be a real directory only its owner (root) writes:
// anyone else could plant a symlink or a file where allot writes as root.
core::Result<void> privateDir(const char* key, const std::string& dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) return {};  // missing: made 0700 on first use
    if (S_ISLNK(st.st_mode))
        return makeError(Errc::InvalidConfig,
                         std::string("\"") + key + "\" \"" + dir + "\" is a symlink");
    if (!S_ISDIR(st.st_mode))
        return makeError(Errc::InvalidConfig,
                         std::string("\"") + key + "\" \"" + dir + "\" is not a directory");
    if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return makeError(
            Errc::InvalidConfig,
            std::string("\"") + key + "\" \"" + dir + "\" may be written by others (owner uid " +
                std::to_string(st.st_uid) + ", mode " + mode +
                "); it must be owned by allot's user and not group- or world-writable");
    }
    return {};
}

}  // namespace

std::string NodeRoots::describe() const {
    std::string s;
    for (const auto& d : dirs) s += (s.empty() ? "" : ", ") + d;
    return s;
}

NodeRoots nodeRoots(const std::vector<std::string>& adminFlatFiles) {
    NodeRoots r;
    for (const char* d : kOwnRoots) r.dirs.emplace_back(d);
    r.journals.emplace_back(kDefaultJournalDir);
    for (const auto& f : adminFlatFiles) {
        auto v = readFlat(f);
        if (!v) continue;
        r.flatFile = f;
        if (auto d = stringKey(*v, "lock_dir"); !d.empty()) addRoot(r, d);
        if (auto d = stringKey(*v, "journal_dir"); !d.empty()) {
            addRoot(r, d);
            if (auto n = normalise(d); !n.empty()) r.journals.push_back(n);
        }
        if (auto s = stringKey(*v, "relay_socket"); !s.empty()) addRoot(r, dirName(s));
        if (auto l = stringKey(*v, "log_file"); !l.empty()) addRoot(r, dirName(l));
        if (const json::Value* nd = v->find("node_dirs"); nd && nd->isArray())
            for (const auto& item : nd->items())
                if (item.isString()) {
                    addRoot(r, item.asString());
                    if (auto n = normalise(item.asString()); !n.empty() && n != "/")
                        r.journals.push_back(n + "/");
                }
        break;  // the first existing file, as the flat-file lookup does
    }
    return r;
}

bool insideRoots(const NodeRoots& roots, const std::string& path) {
    std::string n = normalise(path);
    if (n.empty()) return false;
    std::string real = resolved(n);
    if (real.empty()) return false;
    for (const auto& root : roots.dirs) {
        if (!lexicallyUnder(n, root)) continue;
        // A symlink inside the root must not lead out of every root.
        for (const auto& other : roots.dirs) {
            std::string realRoot = resolved(other);
            if (!realRoot.empty() && lexicallyUnder(real, realRoot)) return true;
        }
    }
    return false;
}

core::Result<void> checkNodePaths(const core::IpamConfig& cfg, const NodeRoots& roots) {
    if (!cfg.lockDir.empty()) {
        if (!insideRoots(roots, cfg.lockDir)) return outside("lock_dir", cfg.lockDir, roots);
        if (auto p = privateDir("lock_dir", cfg.lockDir); !p) return p;
    }
    if (!cfg.journalDir.empty()) {
        if (!insideRoots(roots, cfg.journalDir))
            return outside("journal_dir", cfg.journalDir, roots);
        std::string n = normalise(cfg.journalDir);
        bool replayed = false;
        std::string list;
        for (const auto& j : roots.journals) {
            // An entry ending in '/' is a node_dirs root: any directory under it.
            replayed = replayed ||
                       (j.back() == '/' ? lexicallyUnder(n, j.substr(0, j.size() - 1)) : n == j);
            list += (list.empty() ? "" : ", ") + (j.back() == '/' ? j + "..." : j);
        }
        if (!replayed)
            return makeError(
                Errc::InvalidConfig,
                "\"journal_dir\" \"" + cfg.journalDir +
                    "\" is not a directory allot-gc replays, so a release journaled there would "
                    "be lost; allot-gc replays " +
                    list +
                    " (its --journal-dir, named to the plugin by the flat file's journal_dir)");
        if (auto p = privateDir("journal_dir", cfg.journalDir); !p) return p;
    }
    if (!cfg.relaySocket.empty() && !insideRoots(roots, cfg.relaySocket))
        return outside("relay_socket", cfg.relaySocket, roots);
    return {};
}

core::Result<void> checkLogFile(const std::string& path, const NodeRoots& roots) {
    if (!insideRoots(roots, path)) return outside("log_file", path, roots);
    return {};
}

}  // namespace allot::plugin
