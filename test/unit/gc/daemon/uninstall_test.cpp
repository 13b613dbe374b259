#include "gc-sidecar/daemon/uninstall.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "../../k8s/fake_server.h"
#include "../../temp_dir.h"

namespace fs = std::filesystem;
using allot::gc::awaitDaemonSetGone;
using allot::gc::daemonSetGone;
using allot::gc::NodeFiles;
using allot::gc::removeNodeFiles;
using allot::gc::removeOwnNodeFiles;
using namespace std::chrono_literals;

namespace {

struct TempNode {
    allot::test::TempDir dir;
    fs::path root = dir.path;
    TempNode() {
        for (auto f : {"bin/allot", "bin/macvlan", "conf/allot.conf", "conf/nodename",
                       "conf/allot.kubeconfig", "conf/other.conf", "run/locks/a.lock",
                       "journal/ctr-1-net1.json", "journal/ctr-2-net1.json", "journal/notes.txt"})
            dir.write(f, "x");
    }
    NodeFiles files() const {
        return {(root / "bin/allot").string(),
                (root / "conf").string(),
                {"allot.conf", "nodename", "allot.kubeconfig"}};
    }
};

}  // namespace

TEST_CASE("uninstall removes the plugin and allot's conf files; the journal and locks stay") {
    TempNode n;
    auto r = removeNodeFiles(n.files());

    CHECK(r.failed.empty());
    CHECK(r.removed.size() == 4);  // allot and 3 conf files
    for (auto gone : {"bin/allot", "conf/allot.conf", "conf/nodename", "conf/allot.kubeconfig"})
        CHECK_MESSAGE(!fs::exists(n.root / gone), gone);
    for (auto kept : {"bin/macvlan", "conf/other.conf", "run/locks/a.lock",
                      "journal/ctr-1-net1.json", "journal/notes.txt", "conf"})
        CHECK_MESSAGE(fs::exists(n.root / kept), kept);
}

TEST_CASE("an alias goes with the plugin while it is a copy of it; one written over stays") {
    TempNode n;
    n.dir.write("bin/allot", "allot-binary");
    n.dir.write("bin/whereabouts", "allot-binary");
    n.dir.write("bin/other", "whereabouts-own-binary");
    fs::create_symlink(n.root / "bin/allot", n.root / "bin/linked");
    auto files = n.files();
    for (auto a : {"whereabouts", "other", "linked", "absent"})
        files.aliases.push_back((n.root / "bin" / a).string());

    auto r = removeNodeFiles(files);
    CHECK(r.failed.empty());
    CHECK_FALSE(fs::exists(n.root / "bin/allot"));
    CHECK_FALSE(fs::exists(n.root / "bin/whereabouts"));
    CHECK(fs::exists(n.root / "bin/other"));                       // another install's binary now
    CHECK(fs::exists(fs::symlink_status(n.root / "bin/linked")));  // not written by install-cni
    CHECK(r.removed.size() == 5);                                  // alias, allot, 3 conf files
}

TEST_CASE("uninstall a second time removes nothing and fails nothing; empty members are skipped") {
    TempNode n;
    removeNodeFiles(n.files());
    auto again = removeNodeFiles(n.files());
    CHECK(again.removed.empty());
    CHECK(again.failed.empty());

    auto none = removeNodeFiles(NodeFiles{});
    CHECK(none.removed.empty());
    CHECK(fs::exists(n.root / "bin/macvlan"));
}

namespace {

const char* kOwnUid = "6f1c2f0e-7d3a-4c7e-9a51-0d5f6c1e2b3a";
const char* kNewUid = "a3e9d4b2-1c8f-4e6a-b7d0-5f2e9c4a1b80";

// Whether the plugin and allot's conf files (install-cni.sh's and allot-gc's) are all there.
bool installed(const TempNode& n) {
    for (auto f : {"bin/allot", "conf/allot.conf", "conf/nodename", "conf/allot.kubeconfig"})
        if (!fs::exists(n.root / f)) return false;
    return true;
}

// An exclusive flock on the node's install lock, as install-cni.sh's `flock` takes it.
struct HeldLock {
    int fd;
    explicit HeldLock(const TempNode& n)
        : fd(::open((n.root / "conf/.install.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
        REQUIRE(fd >= 0);
        REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
    }
    ~HeldLock() { ::close(fd); }
};

}  // namespace

TEST_CASE("uninstall removes the install its own pod UID stamped, and the stamp with it") {
    TempNode n;
    n.dir.write("conf/installed-by", std::string(kOwnUid) + "\n");
    auto r = removeOwnNodeFiles(n.files(), kOwnUid, 1s);
    REQUIRE(r.ok());
    CHECK(r->failed.empty());
    CHECK(r->removed.size() == 5);  // allot, 3 conf files, the stamp
    CHECK_FALSE(fs::exists(n.root / "conf/installed-by"));
    CHECK_FALSE(fs::exists(n.root / "bin/allot"));
    CHECK_FALSE(fs::exists(n.root / "conf/allot.conf"));
    CHECK(fs::exists(n.root / "conf/.install.lock"));  // a lock file is never removed
    CHECK(fs::exists(n.root / "conf/other.conf"));
    CHECK(fs::exists(n.root / "journal/ctr-1-net1.json"));
}

TEST_CASE(
    "uninstall leaves an install stamped by another pod (a replacement's) whole, and says whose") {
    TempNode n;
    n.dir.write("conf/installed-by", std::string(kNewUid) + "\n");
    auto r = removeOwnNodeFiles(n.files(), kOwnUid, 1s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == allot::core::Errc::Conflict);
    CHECK(r.error().message.find(std::string("installed by pod UID ") + kNewUid +
                                 ", not this pod") != std::string::npos);
    CHECK(installed(n));
    CHECK(fs::exists(n.root / "conf/installed-by"));
}

TEST_CASE(
    "uninstall removes nothing without a stamp, with an empty one, or without a pod UID or conf "
    "dir") {
    TempNode n;
    auto noStamp = removeOwnNodeFiles(n.files(), kOwnUid, 1s);
    REQUIRE_FALSE(noStamp.ok());
    CHECK(noStamp.code() == allot::core::Errc::NotFound);
    CHECK(noStamp.error().message.find("no install stamp") != std::string::npos);
    CHECK(installed(n));

    n.dir.write("conf/installed-by", "\n");
    CHECK(removeOwnNodeFiles(n.files(), kOwnUid, 1s).code() == allot::core::Errc::NotFound);
    CHECK(installed(n));

    n.dir.write("conf/installed-by", kOwnUid);
    auto noUid = removeOwnNodeFiles(n.files(), "", 1s);
    REQUIRE_FALSE(noUid.ok());
    CHECK(noUid.code() == allot::core::Errc::InvalidConfig);
    CHECK(noUid.error().message.find("--pod-uid") != std::string::npos);
    auto noDir = n.files();
    noDir.confDir.clear();
    CHECK(removeOwnNodeFiles(noDir, kOwnUid, 1s).code() == allot::core::Errc::InvalidConfig);
    CHECK(installed(n));
    CHECK(fs::exists(n.root / "conf/installed-by"));
}

TEST_CASE(
    "uninstall gives up within its bound while an install holds the lock, and removes nothing") {
    TempNode n;
    n.dir.write("conf/installed-by", kOwnUid);
    HeldLock install(n);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = removeOwnNodeFiles(n.files(), kOwnUid, 300ms);
    const auto took = std::chrono::steady_clock::now() - t0;
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == allot::core::Errc::Transient);
    CHECK(took >= 300ms);
    CHECK(took < 2s);
    CHECK(installed(n));
    CHECK(fs::exists(n.root / "conf/installed-by"));
}

TEST_CASE(
    "uninstall waits for an install in progress, then sees the new pod's stamp and removes "
    "nothing") {
    TempNode n;
    n.dir.write("conf/installed-by", kOwnUid);
    auto install = std::make_unique<HeldLock>(n);
    // The replacement pod's install-cni.sh: under the lock, installs again and stamps last.
    std::thread installer([&] {
        std::this_thread::sleep_for(200ms);
        n.dir.write("bin/allot", "new-plugin");
        n.dir.write("conf/installed-by", std::string(kNewUid) + "\n");
        install.reset();
    });
    auto r = removeOwnNodeFiles(n.files(), kOwnUid, 5s);
    installer.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == allot::core::Errc::Conflict);
    CHECK(installed(n));
}

namespace {

// daemonSetGone over an API server that answers the DaemonSet's read with `status` and `body`.
allot::core::Result<bool> goneWhen(int status, const std::string& body) {
    allot::test::FakeServer server({{allot::test::response(status, body)}});
    allot::k8s::ClusterConfig cfg;
    cfg.server = server.url();
    cfg.token = "t";
    auto client = allot::k8s::Client::fromConfig(cfg);
    REQUIRE(client.ok());
    auto r = daemonSetGone(*client, "kube-system/allot");
    REQUIRE(server.requests().size() == 1);
    CHECK(server.requests()[0].find("GET /apis/apps/v1/namespaces/kube-system/daemonsets/allot ") ==
          0);
    return r;
}

const char* kStatus = R"({"kind":"Status","apiVersion":"v1","status":"Failure"})";

}  // namespace

TEST_CASE(
    "the DaemonSet counts as gone when it is absent, being deleted, or allot-gc's identity is "
    "gone") {
    CHECK(*goneWhen(404, kStatus));
    CHECK(*goneWhen(200,
                    R"({"metadata":{"name":"allot","deletionTimestamp":"2026-01-01T00:00:00Z"}})"));
    CHECK(*goneWhen(401, kStatus));
}

TEST_CASE("a DaemonSet that exists, a Forbidden read or a server error removes nothing") {
    auto live = goneWhen(200, R"({"metadata":{"name":"allot"}})");
    REQUIRE(live.ok());
    CHECK_FALSE(*live);
    // A rollback to RBAC without the DaemonSet's get: allot is still installed.
    auto forbidden = goneWhen(403, kStatus);
    CHECK(!(forbidden.ok() && *forbidden));
    auto failing = goneWhen(500, kStatus);
    CHECK(!(failing.ok() && *failing));
}

namespace {

// awaitDaemonSetGone over an API server that answers the reads with `statuses` in turn, waiting
// about a second between reads for at most `retries` more reads; `reads` gets how many were made.
allot::core::Result<bool> awaitWhen(const std::vector<int>& statuses, int retries, size_t& reads) {
    std::vector<allot::test::FakeServer::Reply> replies;
    for (int s : statuses) replies.push_back({allot::test::response(s, kStatus)});
    allot::test::FakeServer server(replies);
    allot::k8s::ClusterConfig cfg;
    cfg.server = server.url();
    cfg.token = "t";
    auto client = allot::k8s::Client::fromConfig(cfg);
    REQUIRE(client.ok());
    std::chrono::milliseconds slept{0};
    allot::engine::RetryPolicy retry(allot::engine::Clock::time_point::max(),
                                     {std::chrono::seconds(1), std::chrono::seconds(1)},
                                     retries + 1, [&](std::chrono::milliseconds d) { slept += d; });
    auto r = awaitDaemonSetGone(*client, "kube-system/allot", retry);
    reads = server.requests().size();
    CHECK(slept <= std::chrono::seconds(retries));
    return r;
}

}  // namespace

TEST_CASE(
    "a Forbidden read is asked again: an uninstall's deleted identity turns it into Unauthorized") {
    size_t reads = 0;
    auto r = awaitWhen({403, 403, 401}, 15, reads);
    REQUIRE(r.ok());
    CHECK(*r);
    CHECK(reads == 3);
}

TEST_CASE("a read Forbidden for the whole patience (RBAC without it: a rollback) removes nothing") {
    size_t reads = 0;
    auto r = awaitWhen({403, 403, 403, 403}, 3, reads);
    CHECK(!(r.ok() && *r));
    CHECK(reads == 4);
    // Any other answer is taken at once.
    auto live = awaitWhen({404}, 15, reads);
    CHECK(live.ok());
    CHECK(reads == 1);
}
