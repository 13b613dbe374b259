#include "gc-sidecar/node/reclaimer.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "../../cluster/fake_cluster.h"
#include "../../temp_dir.h"
#include "../event_log.h"
#include "core/naming.h"
#include "node_state/add_marks.h"
#include "node_state/journal.h"
#include "version/version.h"

using allot::core::Result;
using namespace allot;
using namespace std::chrono_literals;

namespace {

constexpr const char* kNs = "pools";
constexpr const char* kNode = "n1";

core::Owner own(const std::string& ctr, const std::string& ref, const std::string& uid,
                const std::string& node = kNode, const std::string& ifName = "net1") {
    return core::Owner{ctr, ref, ifName, node, uid, "macnet"};
}

std::string status(const std::string& nad, const std::string& ip) {
    return R"([{"name":"cbr0","interface":"eth0","ips":["10.244.0.5"],"default":true},{"name":")" +
           nad + R"(","interface":"net1","ips":[")" + ip + R"("]}])";
}

struct Fixture {
    test::FakeCluster fake;
    test::EventLog events;
    gc::Metrics metrics;
    gc::StopSignal stop;
    gc::ReclaimerOptions opts;
    std::unique_ptr<gc::Reclaimer> r;
    gc::Clock::time_point now = gc::Clock::now();
    std::set<core::IpAddress> nodeHeld;
    bool probeFails = false;

    Fixture() {
        opts.node = kNode;
        opts.poolNamespace = kNs;
        opts.flatFiles = {"/nonexistent/allot-gc-flat"};
        opts.retryBase = 10ms;
        opts.releaseRetries = 3;
        // No network namespace on this node holds anything, unless a test says so.
        opts.probe = [this]() -> core::Result<std::set<core::IpAddress>> {
            if (probeFails) return core::makeError(core::Errc::Internal, "setns: not permitted");
            return nodeHeld;
        };
        fake.putNad(
            "app", "macnet",
            R"({"cniVersion":"1.1.0","name":"macnet","type":"macvlan","ipam":{"type":"allot","range":"10.1.0.0/24","namespace":"pools"}})");
        fake.putPool(kNs, {"10.1.0.0-24", "10.1.0.0/24", {}, {}, {}});
        make();
    }
    void make(int slots = 3) {
        std::vector<cluster::Cluster*> cs(static_cast<size_t>(slots), &fake);
        r = std::make_unique<gc::Reclaimer>(opts, cs, events, metrics, stop);
    }
    // An allocation at offset `off` of 10.1.0.0/24 with its reservation.
    void allocate(core::u128 off, const core::Owner& o, const char* pool = "10.1.0.0-24") {
        auto p = *fake.pool(kNs, pool);
        p.allocations[off] = o;
        fake.putPool(kNs, p);
        auto ip = core::Cidr::parse(p.range)->at(off);
        fake.putReservation(kNs,
                            {core::reservationName(ip, ""), o.containerId, o.podRef, o.ifName, ""});
    }
    bool held(core::u128 off, const char* pool = "10.1.0.0-24") {
        return fake.pool(kNs, pool)->allocations.count(off) != 0;
    }
    void run() {
        now += 1h;  // every retry is due
        r->runOnce(now);
    }
};

}  // namespace

TEST_CASE("a deleted pod's allocation and reservation are released, with an Event and a metric") {
    Fixture f;
    f.allocate(5, own("c1", "app/web", "u1"));
    f.allocate(6, own("c2", "app/other", "u2"));
    f.fake.putPod("app", "other", "u2");
    f.r->podDeleted({"app", "web", "u1", true, status("app/macnet", "10.1.0.5")});
    f.run();
    CHECK_FALSE(f.held(5));
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.5"));
    CHECK(f.held(6));
    CHECK(f.fake.hasReservation(kNs, "10.1.0.6"));
    CHECK(f.events.count("AddressReleased") == 1);
    CHECK(f.metrics.releases("pod_deleted") == 1);
    CHECK(f.r->pending() == 0);
}

TEST_CASE(
    "StatefulSet re-creation: the old UID's address is freed once unused, the new pod's kept") {
    Fixture f;
    f.allocate(5, own("c1", "app/web-0", "u1"));
    f.allocate(6, own("c2", "app/web-0", "u2"));  // the new pod got another address
    f.fake.putPod("app", "web-0", "u2");          // re-created before the deletion was handled
    f.nodeHeld = {*core::IpAddress::parse("10.1.0.5")};  // the old sandbox still runs here
    f.r->podDeleted({"app", "web-0", "u1", true, status("app/macnet", "10.1.0.5")});
    f.run();
    CHECK(f.held(5));
    CHECK(f.events.count("AddressKept") == 1);
    f.nodeHeld.clear();  // now it stopped
    f.r->podDeleted({"app", "web-0", "u1", true, status("app/macnet", "10.1.0.5")});
    f.run();
    CHECK_FALSE(f.held(5));
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.5"));
    CHECK(f.held(6));
    CHECK(f.fake.hasReservation(kNs, "10.1.0.6"));
}

TEST_CASE("a forged network-status naming another pod's IP frees nothing of that pod") {
    Fixture f;
    f.allocate(7, own("cv", "app/victim", "uv"));
    f.fake.putPod("app", "victim", "uv");
    f.allocate(8, own("cf", "app/forger", "uf"));
    f.r->podDeleted({"app", "forger", "uf", true, status("app/macnet", "10.1.0.7")});
    f.run();
    CHECK(f.held(7));
    CHECK(f.fake.hasReservation(kNs, "10.1.0.7"));
    CHECK_FALSE(f.held(8));
}

TEST_CASE(
    "an entry without pod UID is released by podref, unless the pod is re-created meanwhile") {
    Fixture f;
    f.allocate(9, core::Owner{"wb", "app/db-0", "net1", "", "", ""});  // as Whereabouts writes it
    // The pod comes back between the pool read and the write: the check after the read sees it.
    f.fake.afterNextRead("10.1.0.0-24", [&] { f.fake.putPod("app", "db-0", "u-new"); });
    f.r->podDeleted({"app", "db-0", "u-old", true, status("app/macnet", "10.1.0.9")});
    f.run();
    CHECK(f.held(9));
    f.fake.removePod("app", "db-0");
    f.r->podDeleted({"app", "db-0", "u-new", true, status("app/macnet", "10.1.0.9")});
    f.run();
    CHECK_FALSE(f.held(9));
}

TEST_CASE("a write conflict re-reads the pool and keeps what another node wrote meanwhile") {
    Fixture f;
    f.allocate(5, own("c1", "app/web", "u1"));
    f.fake.afterNextRead("10.1.0.0-24", [&] {
        auto p = *f.fake.pool(kNs, "10.1.0.0-24");
        p.allocations[20] = own("c9", "app/new", "u9", "n2");
        f.fake.putPool(kNs, p);  // new resourceVersion: our write conflicts
    });
    f.r->podDeleted({"app", "web", "u1", true, status("app/macnet", "10.1.0.5")});
    f.run();
    CHECK_FALSE(f.held(5));
    CHECK(f.held(20));
}

TEST_CASE(
    "malformed, missing or dangling network-status: the pod's entries on this node are found and "
    "freed") {
    Fixture f;
    f.fake.putPool(kNs, {"10.9.0.0-24", "10.9.0.0/24", {}, {}, {}});
    f.allocate(1, own("c1", "app/bad", "u1"), "10.9.0.0-24");
    f.allocate(2, own("c2", "app/none", "u2"));
    f.allocate(3, own("c3", "app/ghost", "u3"));
    f.allocate(4, core::Owner{"c4", "app/bad", "net1", "", "", ""});  // no node: not provably ours
    f.allocate(5, core::Owner{"c5", "app/none", "net1", "n2", "", ""});  // another node's
    // The catch-up scan finds the pools holding this node's entries.
    f.r->catchUp({{"app", "bad", "u1", false, ""},
                  {"app", "none", "u2", false, ""},
                  {"app", "ghost", "u3", false, ""}});
    f.run();
    const int lists = f.fake.calls("eachPool");
    f.r->podDeleted({"app", "bad", "u1", true, R"([{"name": "x/y", "ips": [12])"});
    f.r->podDeleted({"app", "none", "u2", false, ""});
    f.r->podDeleted({"app", "ghost", "u3", true, status("app/no-such-nad", "10.1.0.3")});
    f.run();
    CHECK_FALSE(f.held(1, "10.9.0.0-24"));
    CHECK_FALSE(f.held(2));
    CHECK_FALSE(f.held(3));
    CHECK(f.held(4));
    CHECK(f.held(5));
    // The pod without network-status is looked for only where this node's entries are; the two
    // whose annotation names networks that cannot be resolved cost one scan of the pools.
    CHECK(f.fake.calls("eachPool") == lists + 1);
    CHECK(f.events.count("MalformedNetworkStatus") == 1);
    CHECK(f.metrics.anomaliesFound("malformed_network_status") == 1);
}

TEST_CASE("a huge or deeply nested annotation is handled as malformed") {
    Fixture f;
    f.allocate(1, own("c1", "app/p", "u1"));
    f.r->catchUp({{"app", "p", "u1", false, ""}});  // finds the pool holding this node's entries
    f.run();
    f.r->podDeleted({"app", "p", "u1", true, std::string(300000, '[')});
    f.run();
    CHECK_FALSE(f.held(1));
    CHECK(f.events.count("MalformedNetworkStatus") == 1);
}

TEST_CASE("failures are retried with backoff and end in a ReleaseFailed Event") {
    Fixture f;
    f.allocate(5, own("c1", "app/web", "u1"));
    f.fake.failNext("updatePool", 2, core::Errc::Transient);
    f.r->podDeleted({"app", "web", "u1", true, status("app/macnet", "10.1.0.5")});
    f.now = gc::Clock::now();
    f.r->runOnce(f.now);
    CHECK(f.held(5));
    CHECK(f.r->pending() == 1);
    f.r->runOnce(f.now);  // not due yet: nothing happens
    CHECK(f.fake.calls("updatePool") == 1);
    f.run();
    f.run();
    CHECK_FALSE(f.held(5));
    CHECK(f.events.count("ReleaseFailed") == 0);

    f.allocate(6, own("c2", "app/db", "u2"));
    f.fake.failNext("getPod", 100, core::Errc::Transient);
    f.r->podDeleted({"app", "db", "u2", true, status("app/macnet", "10.1.0.6")});
    for (int i = 0; i < 5; ++i) f.run();
    CHECK(f.held(6));
    CHECK(f.r->pending() == 0);
    CHECK(f.events.count("ReleaseFailed") == 1);
}

TEST_CASE("catch-up releases this node's entries whose pods are gone, and nothing else") {
    Fixture f;
    f.allocate(1, own("c1", "app/gone", "u1"));
    f.allocate(2, own("c2", "app/live", "u2"));
    f.allocate(3, own("c3", "app/elsewhere", "u3", "n2"));
    f.allocate(4, own("c4", "app/recreated", "u4"));
    f.allocate(5, core::Owner{"c5", "app/nouid-gone", "net1", kNode, "", ""});
    f.allocate(6, core::Owner{"c6", "app/recreated", "net1", kNode, "", ""});
    f.fake.putPod("app", "live", "u2");
    f.fake.putPod("app", "recreated", "u4-new");  // now on another node, say
    f.r->catchUp({{"app", "live", "u2", false, ""}});
    f.run();
    CHECK(f.r->caughtUp());
    CHECK_FALSE(f.held(1));
    CHECK(f.held(2));
    CHECK(f.held(3));
    CHECK_FALSE(f.held(4));  // the old UID's: the new pod never takes it over
    CHECK_FALSE(f.held(5));
    CHECK(f.held(6));  // no UID recorded: it may be the new pod's
    CHECK(f.metrics.releases("catch_up") == 3);
}

TEST_CASE(
    "the node sweep frees this node's entry of a gone pod once no namespace here holds it, and "
    "reports the probe to the leader") {
    Fixture f;
    f.opts.sweepInterval = 5s;
    f.opts.reportNamespace = "kube-system";
    std::vector<gc::PodRecord> live;
    f.opts.livePods = [&] { return std::optional(live); };
    f.make();
    f.allocate(5, own("c5", "app/forced", "u5"));  // its pod force-deleted, event missed
    const auto ip = *core::IpAddress::parse("10.1.0.5");
    f.nodeHeld = {ip};
    f.r->catchUp({});
    for (int i = 0; i < 3; ++i) f.run();  // the pod watch's catch-up, then sweeps
    CHECK(f.held(5));
    CHECK(f.events.count("AddressKept") == 1);  // once, not at every sweep
    auto rep = f.fake.report(kNode);
    REQUIRE(rep);
    CHECK(rep->complete);
    CHECK(rep->held.count(ip) == 1);
    CHECK(rep->version == allot::version());  // what kubectl allot version shows for the node
    CHECK(rep->revision == allot::revision());
    CHECK(rep->nodeUid.empty());  // no Node of this name: the report proves no Node was here
    f.fake.putNode(kNode, true);
    f.run();
    CHECK(f.fake.report(kNode)->nodeUid == std::string("uid-") + kNode);
    f.nodeHeld.clear();
    f.run();
    CHECK_FALSE(f.held(5));
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.5"));
    CHECK(f.metrics.releases("node_sweep") == 1);
    // Between full scans a sweep reads only the pools known to hold this node's entries.
    CHECK(f.fake.calls("eachPool") == 1);
    f.probeFails = true;
    f.run();
    CHECK_FALSE(f.fake.report(kNode)->complete);
}

TEST_CASE("a failed catch-up scan is retried; readiness waits for it") {
    Fixture f;
    f.fake.failNext("eachPool", 1, core::Errc::Transient);
    f.r->catchUp({});
    f.run();
    CHECK_FALSE(f.r->caughtUp());
    f.run();
    CHECK(f.r->caughtUp());
}

TEST_CASE("node-slice networks release from this node's slice pool") {
    Fixture f;
    f.fake.putNad(
        "app", "slicenet",
        R"({"name":"slicenet","type":"macvlan","ipam":{"type":"whereabouts","range":"10.5.0.0/16","node_slice_size":"/24","namespace":"pools"}})");
    f.fake.putSlice(kNs, "slicenet", kNode, "10.5.3.0/24");
    const std::string pool = core::poolName(*core::Cidr::parse("10.5.3.0/24"), "", kNode);
    f.fake.putPool(kNs, {pool, "10.5.3.0/24", {}, {}, {}});
    f.allocate(4, own("c1", "app/s", "u1"), pool.c_str());
    f.r->podDeleted({"app", "s", "u1", true, status("app/slicenet", "10.5.3.4")});
    f.run();
    CHECK_FALSE(f.held(4, pool.c_str()));
}

TEST_CASE("journal entries are replayed and removed only after success") {
    Fixture f;
    char tmpl[] = "/tmp/allot-gc-journal-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    f.opts.journalDir = tmpl;
    f.make();
    node_state::Journal j(tmpl);
    f.allocate(5, own("c1", "app/web", "u1"));
    f.allocate(6, own("c2", "app/db", "u2"));
    f.fake.putPod("app", "web", "u1");  // the pod lives: only the journal says to release
    REQUIRE(j.append({kNs, {"10.1.0.0-24"}, "", "c1", "net1", "app/web", kNode, {}}).ok());
    REQUIRE(
        j.append({"", {}, "", "c2", "net1", "app/db", kNode, {}}).ok());  // no pools named: search
    f.fake.failNext("updatePool", 1, core::Errc::Transient);
    f.run();
    CHECK(f.held(5));  // first replay failed: entry kept
    CHECK(j.entries()->size() == 1);
    CHECK_FALSE(f.held(6));
    f.run();
    CHECK_FALSE(f.held(5));
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.5"));
    CHECK(j.entries()->empty());
    CHECK(f.metrics.releases("journal") == 2);
    std::filesystem::remove_all(tmpl);
}

TEST_CASE("journaled reservations are deleted only while they are still the container's") {
    Fixture f;
    char tmpl[] = "/tmp/allot-gc-journal-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    f.opts.journalDir = tmpl;
    f.make();
    // The plugin released the pool entries but could not delete these reservations in time.
    f.fake.putReservation(kNs, {"10.1.0.7", "c7", "app/x", "net1", ""});
    f.fake.putReservation(kNs, {"10.1.0.8", "someone-else", "app/y", "net1", ""});
    node_state::Journal j(tmpl);
    engine::JournalEntry rec{kNs, {}, "", "c7", "net1", "app/x", kNode, {}};
    rec.reservations = {"10.1.0.7", "10.1.0.8", "10.1.0.9"};
    REQUIRE(j.append(rec).ok());
    f.run();
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.7"));
    CHECK(f.fake.hasReservation(kNs, "10.1.0.8"));  // re-used by another container meanwhile
    CHECK(j.entries()->empty());
    std::filesystem::remove_all(tmpl);
}

TEST_CASE("many pods deleted at once cost one pool write per pool") {
    Fixture f;
    for (int i = 1; i <= 50; ++i)
        f.allocate(
            static_cast<core::u128>(i),
            own("c" + std::to_string(i), "app/p" + std::to_string(i), "u" + std::to_string(i)));
    for (int i = 1; i <= 50; ++i)
        f.r->podDeleted({"app", "p" + std::to_string(i), "u" + std::to_string(i), true,
                         status("app/macnet", "10.1.0.1")});
    const int before = f.fake.calls("updatePool");
    f.run();
    CHECK(f.fake.calls("updatePool") - before == 1);
    CHECK(f.fake.pool(kNs, "10.1.0.0-24")->allocations.empty());
    CHECK(f.fake.calls("getNadConfig") == 1);  // cached
    CHECK(f.fake.calls("eachPod") == 1);       // one list rather than fifty GETs
}

namespace {

gc::PodRecord deleted(const std::string& name, const std::string& uid, const std::string& ip) {
    return gc::PodRecord{"app", name, uid, true, status("app/macnet", ip)};
}

core::IpAddress addr(const char* s) {
    return *core::IpAddress::parse(s);
}

}  // namespace

TEST_CASE("a force-deleted pod whose sandbox still holds its address on this node frees nothing") {
    Fixture f;
    f.allocate(5, own("c1", "app/web", "u1"));
    f.nodeHeld = {addr("10.1.0.5")};  // a network namespace on the node still has it
    f.r->podDeleted(deleted("web", "u1", "10.1.0.5"));
    f.run();
    CHECK(f.held(5));
    CHECK(f.fake.hasReservation(kNs, "10.1.0.5"));
    CHECK(f.events.count("AddressKept") == 1);
    CHECK(f.metrics.releases("pod_deleted") == 0);
}

TEST_CASE("without a namespace probe, or when it fails, an unproven deletion frees nothing") {
    SUBCASE("probe fails") {
        Fixture f;
        f.probeFails = true;
        f.allocate(5, own("c1", "app/web", "u1"));
        f.r->podDeleted(deleted("web", "u1", "10.1.0.5"));
        f.run();
        CHECK(f.held(5));
    }
    SUBCASE("no probe") {
        Fixture f;
        f.opts.probe = nullptr;
        f.make();
        f.allocate(5, own("c1", "app/web", "u1"));
        f.r->podDeleted(deleted("web", "u1", "10.1.0.5"));
        f.run();
        CHECK(f.held(5));
    }
}

TEST_CASE("a pod whose containers all terminated keeps its address while a namespace holds it") {
    // A Job pod deleted as it succeeds: its sandbox and namespace stay until StopPodSandbox.
    Fixture f;
    f.allocate(5, own("c1", "app/job", "u1"));
    f.nodeHeld = {addr("10.1.0.5")};
    f.r->podDeleted(deleted("job", "u1", "10.1.0.5"));
    f.run();
    CHECK(f.held(5));
    f.nodeHeld.clear();  // the sandbox stopped
    f.r->podDeleted(deleted("job", "u1", "10.1.0.5"));
    f.run();
    CHECK_FALSE(f.held(5));
}

TEST_CASE("hostNetwork and mirror pods' deletions read no pool and free nothing") {
    Fixture f;
    f.allocate(7, own("c7", "kube-system/etcd-n1", "hash-h"));
    auto host = deleted("hostpod", "u9", "10.1.0.9");
    host.hasNetworkStatus = false;
    host.hostNetwork = true;
    gc::PodRecord mirror{"kube-system", "etcd-n1", "mirror-uid", false, ""};
    mirror.mirrorOf = "hash-h";
    for (int i = 0; i < 100; ++i) f.r->podDeleted(host);
    f.r->podDeleted(mirror);
    f.run();
    CHECK(f.held(7));
    CHECK(f.fake.calls("eachPool") == 0);
    CHECK(f.fake.calls("getPool") == 0);
}

TEST_CASE("a default network that is an allot NAD is released like any other") {
    Fixture f;
    f.allocate(5, own("c1", "app/web", "u1", kNode, "eth0"));
    gc::PodRecord r{
        "app", "web", "u1", true,
        R"([{"name":"app/macnet","interface":"eth0","ips":["10.1.0.5"],"default":true}])"};
    f.r->podDeleted(r);
    f.run();
    CHECK_FALSE(f.held(5));
    CHECK(f.fake.calls("eachPool") == 0);
}

namespace {

// NAD app/othernet puts its pool (10.7.0.0/24) in namespace other-pools, holding `entries`.
void otherNamespacePool(Fixture& f, const std::map<core::u128, core::Owner>& entries) {
    f.fake.putNad(
        "app", "othernet",
        R"({"cniVersion":"1.1.0","name":"othernet","type":"macvlan","ipam":{"type":"allot","range":"10.7.0.0/24","namespace":"other-pools"}})");
    store::Pool p{"10.7.0.0-24", "10.7.0.0/24", {}, {}, {}};
    p.allocations.insert(entries.begin(), entries.end());
    f.fake.putPool("other-pools", p);
}

bool heldInOther(Fixture& f, core::u128 off) {
    return f.fake.pool("other-pools", "10.7.0.0-24")->allocations.count(off) != 0;
}

}  // namespace

TEST_CASE("catch-up scans the pool namespaces NADs name, not only --namespace") {
    Fixture f;
    otherNamespacePool(
        f, {{4, own("c4", "app/first", "u4")}, {5, own("c5", "app/gone-meanwhile", "u5")}});
    // A deletion names the NAD: its pool namespace is learned.
    gc::PodRecord first{"app", "first", "u4", true,
                        R"([{"name":"app/othernet","interface":"net1","ips":["10.7.0.4"]}])"};
    f.r->podDeleted(first);
    f.run();
    CHECK_FALSE(heldInOther(f, 4));
    // The next catch-up (a relist) finds the pod deleted while no watch was open.
    f.r->catchUp({});
    f.run();
    CHECK_FALSE(heldInOther(f, 5));
}

TEST_CASE("catch-up scans a pool namespace a NAD names before any deletion has named it") {
    Fixture f;
    otherNamespacePool(f, {{5, own("c5", "app/gone-while-down", "u5")}});
    f.r->catchUp({});
    f.run();
    CHECK_FALSE(heldInOther(f, 5));
    CHECK(f.fake.calls("eachNad") == 1);
}

namespace {

// The container runtime as a test sets it: an answer per sandbox, NotFound for the rest.
struct FakeRuntime : gc::SandboxRuntime {
    std::map<std::string, core::RuntimeAnswer> answers;
    core::RuntimeAnswer sandboxState(const std::string& id, std::string* detail) override {
        if (detail) *detail = "fake";
        auto it = answers.find(id);
        return it == answers.end() ? core::RuntimeAnswer::NotFound : it->second;
    }
};

}  // namespace

TEST_CASE("a VM-like pod whose address is on no kernel interface is kept while its sandbox runs") {
    Fixture f;
    auto runtime = std::make_shared<FakeRuntime>();
    runtime->answers["c1"] = core::RuntimeAnswer::Ready;
    f.opts.runtime = runtime;
    f.make();
    f.allocate(5, own("c1", "app/vm-a", "u1"));
    // No namespace holds 10.1.0.5: the guest has it. The runtime says the sandbox runs.
    f.r->podDeleted(deleted("vm-a", "u1", "10.1.0.5"));
    f.run();
    CHECK(f.held(5));
    CHECK(f.events.count("AddressKept") == 1);
    // The kubelet came back and removed the sandbox: the runtime no longer knows it.
    runtime->answers.erase("c1");
    f.r->podDeleted(deleted("vm-a", "u1", "10.1.0.5"));
    f.run();
    CHECK_FALSE(f.held(5));
    CHECK(f.metrics.render().find("allot_runtime_answers_total{answer=\"ready\"} 1") !=
          std::string::npos);
}

TEST_CASE("a runtime that cannot be asked keeps the address") {
    Fixture f;
    auto runtime = std::make_shared<FakeRuntime>();
    runtime->answers["c1"] = core::RuntimeAnswer::Unknown;
    f.opts.runtime = runtime;
    f.make();
    f.allocate(5, own("c1", "app/web", "u1"));
    f.r->podDeleted(deleted("web", "u1", "10.1.0.5"));
    f.run();
    CHECK(f.held(5));
}

TEST_CASE("a pod force-deleted while its ADD is in flight keeps its address until the bound") {
    Fixture f;
    test::TempDir dir;
    auto marks = std::make_shared<node_state::FileAddMarks>(dir.path.string() + "/adds");
    f.opts.addMarks = marks;
    f.opts.runtime = std::make_shared<FakeRuntime>();  // the sandbox is not in the runtime yet
    f.opts.addInFlightBound = 200ms;
    f.make();
    REQUIRE(marks->mark("c1"));  // the plugin's ADD for c1 has started
    f.allocate(5, own("c1", "app/creating", "u1"));
    f.allocate(6, own("c2", "app/old", "u2"));  // its ADD was long ago: no mark
    f.r->podDeleted(deleted("creating", "u1", "10.1.0.5"));
    f.r->podDeleted(deleted("old", "u2", "10.1.0.6"));
    f.run();
    CHECK(f.held(5));
    CHECK_FALSE(f.held(6));
    // Past the bound the ADD can no longer be running: the runtime's NotFound frees it.
    std::this_thread::sleep_for(250ms);
    f.r->podDeleted(deleted("creating", "u1", "10.1.0.5"));
    f.run();
    CHECK_FALSE(f.held(5));
}

TEST_CASE("an entry another writer made is held for the bound after its pod is known gone") {
    Fixture f;
    test::TempDir dir;
    f.opts.addMarks = std::make_shared<node_state::FileAddMarks>(dir.path.string() + "/adds");
    f.opts.addInFlightBound = 200ms;
    f.make();
    f.allocate(5, own("c1", "app/wb", "u1", ""));  // Whereabouts records no node: marks unknown
    f.r->podDeleted(deleted("wb", "u1", "10.1.0.5"));
    f.run();
    CHECK(f.held(5));
    std::this_thread::sleep_for(250ms);
    f.r->podDeleted(deleted("wb", "u1", "10.1.0.5"));
    f.run();
    CHECK_FALSE(f.held(5));
}
