#include "gc-sidecar/daemon/uninstall.h"

#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include "json/json.h"
#include "k8s_api/resources.h"
#include "sys/fd.h"

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

namespace {

using core::Errc;
using core::makeError;

// The install lock, held while the returned descriptor is open. flock(2) has no timeout, and
// a SIGALRM (file_lock.cpp's bound) in this threaded process interrupts whichever thread takes
// it, not this one: so non-blocking tries, a short poll apart, until `wait` has passed.
core::Result<sys::Fd> lockInstall(const fs::path& path, std::chrono::milliseconds wait) {
    using Clock = std::chrono::steady_clock;
    sys::Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd)
        return makeError(Errc::Internal, "open " + path.string() + ": " + std::strerror(errno));
    const auto deadline = Clock::now() + wait;
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return makeError(Errc::Internal, "lock " + path.string() + ": " + std::strerror(errno));
        const auto now = Clock::now();
        if (now >= deadline)
            return makeError(Errc::Transient, path.string() + " held by another process (an " +
                                                  "install) for longer than " +
                                                  std::to_string(wait.count()) + " ms");
        std::this_thread::sleep_for(
            std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(20)));
    }
    return fd;
}

// The pod UID the stamp `p` names, its line's end dropped; nullopt when there is no stamp, it
// is not a regular file, or it is empty.
std::optional<std::string> stampedUid(const fs::path& p) {
    auto text = contents(p);
    if (!text) return std::nullopt;
    while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back())))
        text->pop_back();
    if (text->empty()) return std::nullopt;
    return text;
}

}  // namespace

core::Result<Removal> removeOwnNodeFiles(const NodeFiles& files, const std::string& podUid,
                                         std::chrono::milliseconds lockWait) {
    if (podUid.empty())
        return makeError(Errc::InvalidConfig,
                         "no --pod-uid: this pod cannot tell its own install from another's");
    if (files.confDir.empty())
        return makeError(Errc::InvalidConfig,
                         "no configuration directory (--node-kubeconfig's) holds an install stamp");
    const fs::path dir(files.confDir);
    auto lock = lockInstall(dir / kInstallLockFile, lockWait);
    if (!lock) return lock.error();
    const fs::path stamp = dir / kInstallStampFile;
    auto uid = stampedUid(stamp);
    if (!uid)
        return makeError(Errc::NotFound, "no install stamp " + stamp.string() +
                                             " (installed before stamps, or not by allot's "
                                             "install-cni.sh)");
    if (*uid != podUid)
        return makeError(Errc::Conflict,
                         "installed by pod UID " + *uid + ", not this pod (" + podUid + ")");
    Removal r = removeNodeFiles(files);
    removeOne(stamp, r);  // last, still under the lock: the files are gone with it
    return r;
}

}  // namespace allot::gc
