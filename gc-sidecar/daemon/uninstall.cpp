#include "gc-sidecar/daemon/uninstall.h"

#include <filesystem>
#include <system_error>

#include "json/json.h"
#include "k8s/resources.h"

namespace allot::gc {

namespace fs = std::filesystem;

core::Result<bool> daemonSetGone(k8s::Client& client, const std::string& nsName) {
    auto slash = nsName.find('/');
    auto obj = client.get(
        k8s::objectPath(k8s::kDaemonSet, nsName.substr(0, slash), nsName.substr(slash + 1)));
    if (!obj && obj.code() == core::Errc::NotFound) return true;
    if (!obj) return obj.error();
    return !json::stringAt(*obj, {"metadata", "deletionTimestamp"}).empty();
}

namespace {

// remove PATH (recursively when `all`) into `r`.
void removeOne(const fs::path& p, bool all, Removal& r) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return;
    if (all)
        fs::remove_all(p, ec);
    else
        fs::remove(p, ec);
    if (ec)
        r.failed.push_back(p.string() + ": " + ec.message());
    else
        r.removed.push_back(p.string());
}

void removeJournal(const fs::path& dir, Removal& r) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto name = it->path().filename().string();
        if (name.size() <= 5 || !name.ends_with(".json")) continue;
        ++r.journalEntries;
        removeOne(it->path(), false, r);
    }
}

}  // namespace

Removal removeNodeFiles(const NodeFiles& files) {
    Removal r;
    if (!files.pluginBinary.empty()) removeOne(files.pluginBinary, false, r);
    if (!files.confDir.empty())
        for (const auto& f : files.confFiles) removeOne(fs::path(files.confDir) / f, false, r);
    if (!files.locksDir.empty()) removeOne(files.locksDir, true, r);
    if (!files.journalDir.empty()) removeJournal(files.journalDir, r);
    return r;
}

}  // namespace allot::gc
