#include "gc-sidecar/daemon/uninstall.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "json/json.h"
#include "k8s/resources.h"

namespace allot::gc {

namespace fs = std::filesystem;

core::Result<bool> daemonSetGone(k8s::Client& client, const std::string& nsName) {
    auto slash = nsName.find('/');
    auto obj = client.get(
        k8s::objectPath(k8s::kDaemonSet, nsName.substr(0, slash), nsName.substr(slash + 1)));
    if (!obj && (obj.code() == core::Errc::NotFound || obj.code() == core::Errc::Unauthorized))
        return true;
    if (!obj) return obj.error();
    return !json::stringAt(*obj, {"metadata", "deletionTimestamp"}).empty();
}

core::Result<bool> awaitDaemonSetGone(k8s::Client& client, const std::string& nsName,
                                      engine::RetryPolicy retry) {
    for (;;) {
        auto gone = daemonSetGone(client, nsName);
        if (gone || gone.code() != core::Errc::Forbidden || !retry.wait()) return gone;
    }
}

engine::RetryPolicy uninstallRetry() {
    using namespace std::chrono_literals;
    return engine::RetryPolicy(engine::Clock::now() + kUninstallPatience, {1s, 1s});
}

namespace {

// Removes the file `p`, into `r`.
void removeOne(const fs::path& p, Removal& r) {
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return;
    fs::remove(p, ec);
    if (ec)
        r.failed.push_back(p.string() + ": " + ec.message());
    else
        r.removed.push_back(p.string());
}

// The contents of the regular file `p` (not followed through a symlink); nullopt when it is
// not one or cannot be read.
std::optional<std::string> contents(const fs::path& p) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(p, ec))) return std::nullopt;
    std::ifstream in(p, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    if (!in && !in.eof()) return std::nullopt;
    return std::move(out).str();
}

}  // namespace

Removal removeNodeFiles(const NodeFiles& files) {
    Removal r;
    if (!files.aliases.empty() && !files.pluginBinary.empty()) {
        auto plugin = contents(files.pluginBinary);
        for (const auto& a : files.aliases)
            if (plugin && contents(a) == plugin) removeOne(a, r);
    }
    if (!files.pluginBinary.empty()) removeOne(files.pluginBinary, r);
    if (!files.confDir.empty())
        for (const auto& f : files.confFiles) removeOne(fs::path(files.confDir) / f, r);
    return r;
}

}  // namespace allot::gc
