#include "gc-sidecar/leader/repair.h"

#include <doctest/doctest.h>

#include "../../cluster/fake_cluster.h"
#include "../event_log.h"

using namespace allot;
using namespace std::chrono_literals;

namespace {

constexpr const char* kNs = "pools";

// An entry on node "n1", which every Fixture's loop has seen deleted (the leader's own
// authority: core/release_rule.h); `node` names another.
core::Owner own(const std::string& ctr, const std::string& ref, const std::string& uid,
                const std::string& node = "n1") {
    return core::Owner{ctr, ref, "net1", node, uid, "macnet"};
}

struct Fixture {
    test::FakeCluster fake;
    test::EventLog events;
    gc::Metrics metrics;
    gc::StopSignal stop;
    gc::RepairOptions opts;
    std::unique_ptr<gc::RepairLoop> loop;

    Fixture() {
        opts.poolNamespace = kNs;
        opts.leakPasses = 3;
        opts.leakGrace = 0ms;
        metrics.setLeader(true);  // as the elector's callback does, before the loop's
        make();
        fake.putPool(kNs, {"10.1.0.0-24", "10.1.0.0/24", {}, {}, {}});
    }
    // A new loop, which has seen Node n1 listed once and then deleted.
    void make() {
        loop = std::make_unique<gc::RepairLoop>(opts, std::vector<cluster::Cluster*>{&fake, &fake},
                                                events, metrics, stop);
        loop->setLeading(true);
        fake.putNode("n1", true);
        fake.hidePools(true);
        REQUIRE(loop->pass().ok);
        fake.hidePools(false);
        fake.removeNode("n1");
    }
    void allocate(core::u128 off, const core::Owner& o, const char* pool = "10.1.0.0-24",
                  bool reserve = true) {
        auto p = *fake.pool(kNs, pool);
        p.allocations[off] = o;
        fake.putPool(kNs, p);
        if (reserve) {
            auto ip = core::Cidr::parse(p.range)->at(off);
            fake.putReservation(kNs, {ip.str(), o.containerId, o.podRef, o.ifName, ""});
        }
    }
    bool held(core::u128 off, const char* pool = "10.1.0.0-24") {
        return fake.pool(kNs, pool)->allocations.count(off) != 0;
    }
    gc::PassReport pass() {
        auto r = loop->pass();
        REQUIRE(r.ok);
        return r;
    }
};

}  // namespace

TEST_CASE("a leaked allocation is released on the Nth consecutive pass, with its reservation") {
    Fixture f;
    f.allocate(5, own("c1", "app/gone", "u1"));
    f.allocate(6, own("c2", "app/live", "u2"));
    f.fake.putPod("app", "live", "u2");
    CHECK(f.pass().leakCandidates == 1);
    CHECK(f.pass().released == 0);
    CHECK(f.held(5));
    auto third = f.pass();
    CHECK(third.released == 1);
    CHECK_FALSE(f.held(5));
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.5"));
    CHECK(f.held(6));
    CHECK(f.metrics.releases("leak") == 1);
    CHECK(f.events.count("AddressReleased") == 1);
    // Level-driven: the next pass has nothing to do.
    auto again = f.pass();
    CHECK(again.leakCandidates == 0);
    CHECK(again.released == 0);
}

TEST_CASE("the grace period holds a candidate back however many passes see it") {
    Fixture f;
    f.opts.leakGrace = 1h;
    f.make();
    f.allocate(5, own("c1", "app/gone", "u1"));
    for (int i = 0; i < 6; ++i) f.pass();
    CHECK(f.held(5));
}

TEST_CASE("an ADD in flight whose pod appears before the Nth pass is never released") {
    Fixture f;
    f.allocate(5, own("c1", "app/new", ""));
    f.pass();
    f.pass();
    f.fake.putPod("app", "new", "u1");
    for (int i = 0; i < 5; ++i) f.pass();
    CHECK(f.held(5));
}

TEST_CASE(
    "a candidate is re-checked on fresh data: a pod that appears at the last moment keeps it") {
    Fixture f;
    f.allocate(5, own("c1", "app/late", "u1"));
    f.pass();
    f.pass();
    f.fake.afterNextRead("10.1.0.0-24", [&] { f.fake.putPod("app", "late", "u1"); });
    auto r = f.pass();
    CHECK(r.released == 0);
    CHECK(f.held(5));
}

TEST_CASE(
    "terminated pods and pods re-created with another UID are leaks; UID-less entries of live pods "
    "are not") {
    Fixture f;
    f.allocate(1, own("c1", "app/done", "u1"));
    f.fake.putPod("app", "done", "u1", "Succeeded");
    f.allocate(2, own("c2", "app/sts-0", "old-uid"));
    f.fake.putPod("app", "sts-0", "new-uid");
    f.allocate(3, own("c3", "app/wb", ""));
    f.fake.putPod("app", "wb", "whatever");
    for (int i = 0; i < 3; ++i) f.pass();
    CHECK_FALSE(f.held(1));
    CHECK_FALSE(f.held(2));
    CHECK(f.held(3));
}

TEST_CASE("each pass releases at most the batch size") {
    Fixture f;
    f.opts.batch = 2;
    f.make();
    for (int i = 1; i <= 5; ++i)
        f.allocate(static_cast<core::u128>(i),
                   own("c" + std::to_string(i), "app/g" + std::to_string(i), "u"));
    f.pass();
    f.pass();
    CHECK(f.pass().released == 2);
    CHECK(f.pass().released == 2);
    CHECK(f.pass().released == 1);
    CHECK(f.fake.pool(kNs, "10.1.0.0-24")->allocations.empty());
}

TEST_CASE("duplicate IPs and out-of-range offsets are reported once, counted, and left alone") {
    Fixture f;
    f.fake.putPool(kNs, {"10.1.0.0-25", "10.1.0.0/25", {}, {}, {}});
    f.fake.putPool(kNs, {"10.2.0.0-28", "10.2.0.0/28", {}, {}, {}});
    f.fake.putPod("app", "a", "ua");
    f.fake.putPod("app", "b", "ub");
    f.allocate(5, own("ca", "app/a", "ua"), "10.1.0.0-24", false);
    f.allocate(5, own("cb", "app/b", "ub"), "10.1.0.0-25", false);
    f.allocate(100, own("ca", "app/a", "ua"), "10.2.0.0-28", false);
    auto r = f.pass();
    CHECK(r.anomalies["duplicate_ip"] == 1);
    CHECK(r.anomalies["out_of_range"] == 1);
    for (int i = 0; i < 4; ++i) f.pass();
    CHECK(f.events.count("PoolAnomaly") == 2);
    CHECK(f.metrics.anomaliesFound("duplicate_ip") == 1);
    CHECK(f.metrics.anomaliesFound("out_of_range") == 1);
    CHECK(f.held(5, "10.1.0.0-24"));
    CHECK(f.held(5, "10.1.0.0-25"));
    CHECK(f.held(100, "10.2.0.0-28"));
    const std::string text = f.metrics.render();
    CHECK(text.find("allot_anomalies_total{kind=\"duplicate_ip\"} 1") != std::string::npos);
    CHECK(text.find("allot_anomalies{kind=\"out_of_range\"} 1") != std::string::npos);
}

TEST_CASE(
    "an old reservation without an allocation is deleted after N passes; a fresh one is kept") {
    Fixture f;
    const auto old = std::chrono::system_clock::now() - 1h;
    f.fake.putReservation(kNs, {"10.1.0.77", "gone-ctr", "app/gone", "net1", ""}, old);
    f.opts.leakGrace = 10min;
    f.make();
    f.fake.putReservation(kNs,
                          {"10.1.0.78", "adding-ctr", "app/adding", "net1", ""});  // an ADD mid-way
    auto r = f.pass();
    CHECK(r.anomalies["reservation_without_allocation"] == 2);
    f.pass();
    auto third = f.pass();
    CHECK(third.reservationsDeleted == 0);  // the candidates are not 10 minutes old in this term
    // With no grace, the old one goes on the Nth pass.
    f.opts.leakGrace = 0ms;
    f.make();
    f.fake.putReservation(kNs, {"10.1.0.78", "adding-ctr", "app/adding", "net1", ""});
    f.pass();
    f.pass();
    f.pass();
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.77"));
    CHECK(f.metrics.releases("orphan_reservation") >= 1);
}

TEST_CASE("an anomaly gone before its Nth consecutive pass (an ADD in flight) is never reported") {
    Fixture f;
    f.opts.anomalyPasses = 3;
    f.make();
    f.fake.putPool(kNs, {"10.1.0.0-25", "10.1.0.0/25", {}, {}, {}});
    f.fake.putPod("app", "a", "ua");
    f.fake.putPod("app", "b", "ub");
    f.allocate(5, own("ca", "app/a", "ua"), "10.1.0.0-24", false);
    f.allocate(5, own("cb", "app/b", "ub"), "10.1.0.0-25", false);
    CHECK(f.pass().anomalies["duplicate_ip"] == 1);  // present, not yet reported
    f.pass();
    CHECK(f.events.count("PoolAnomaly") == 0);
    CHECK(f.metrics.anomaliesFound("duplicate_ip") == 0);
    auto p = *f.fake.pool(kNs, "10.1.0.0-25");  // the in-flight ADD gave it back
    p.allocations.clear();
    f.fake.putPool(kNs, p);
    f.pass();
    CHECK(f.events.count("PoolAnomaly") == 0);
    // One that lasts is reported on its third pass, once.
    f.allocate(5, own("cb", "app/b", "ub"), "10.1.0.0-25", false);
    f.pass();
    f.pass();
    CHECK(f.events.count("PoolAnomaly") == 0);
    f.pass();
    f.pass();
    CHECK(f.events.count("PoolAnomaly") == 1);
    CHECK(f.metrics.anomaliesFound("duplicate_ip") == 1);
}

TEST_CASE("a reservation matched by its owner is never an orphan, whatever its name") {
    Fixture f;
    f.fake.putPod("app", "a", "ua");
    f.allocate(5, own("ca", "app/a", "ua"), "10.1.0.0-24", false);
    f.fake.putReservation(kNs, {"oddly-named", "ca", "app/a", "net1", ""},
                          std::chrono::system_clock::now() - 1h);
    for (int i = 0; i < 4; ++i) f.pass();
    CHECK(f.fake.hasReservation(kNs, "oddly-named"));
}

TEST_CASE("a live allocation missing its reservation (where the pool uses them) gets it back") {
    Fixture f;
    f.fake.putPod("app", "a", "ua");
    f.fake.putPod("app", "b", "ub");
    f.allocate(5, own("ca", "app/a", "ua"));
    f.allocate(6, own("cb", "app/b", "ub"), "10.1.0.0-24", false);
    auto r = f.pass();
    CHECK(r.anomalies["allocation_without_reservation"] == 1);
    f.pass();
    CHECK(f.pass().reservationsCreated == 1);
    auto res = f.fake.pools(kNs).getReservation("10.1.0.6");
    REQUIRE(res.ok());
    CHECK(res->containerId == "cb");
    CHECK(f.pass().anomalies["allocation_without_reservation"] == 0);
}

TEST_CASE("pool gauges: size, used and free per pool") {
    Fixture f;
    f.fake.putPod("app", "a", "ua");
    f.allocate(5, own("ca", "app/a", "ua"));
    f.pass();
    const std::string text = f.metrics.render();
    CHECK(text.find("allot_pool_size{namespace=\"pools\",pool=\"10.1.0.0-24\"} 254") !=
          std::string::npos);
    CHECK(text.find("allot_pool_used{namespace=\"pools\",pool=\"10.1.0.0-24\"} 1") !=
          std::string::npos);
    CHECK(text.find("allot_pool_free{namespace=\"pools\",pool=\"10.1.0.0-24\"} 253") !=
          std::string::npos);
}

TEST_CASE("a pass that cannot list fails without releasing anything and without counting") {
    Fixture f;
    f.allocate(5, own("c1", "app/gone", "u1"));
    f.pass();
    f.pass();
    f.fake.failNext("eachPool", 1, core::Errc::Transient);
    auto r = f.loop->pass();
    CHECK_FALSE(r.ok);
    CHECK(f.held(5));
    CHECK(f.pass().released == 1);  // the streak was kept across the failed pass
}

TEST_CASE(
    "an entry allot cannot decode is reported, and neither it nor its reservation is touched") {
    Fixture f;
    auto p = *f.fake.pool(kNs, "10.1.0.0-24");
    auto entry = json::parse(R"({"id":"other-ctr","podref":7})");
    REQUIRE(entry.ok());
    p.undecoded["9"] = store::UndecodedEntry{*entry, "podref is a JSON number, not a string"};
    p.allocations[9] = core::Owner{};
    f.fake.putPool(kNs, p);
    f.fake.putReservation(kNs, {"10.1.0.9", "other-ctr", "", "net1", ""});
    for (int i = 0; i < 4; ++i) {
        auto r = f.pass();
        CHECK(r.anomalies["undecodable_entry"] == 1);
        CHECK(r.anomalies["allocation_without_reservation"] == 0);
        CHECK(r.anomalies["reservation_without_allocation"] == 0);
        CHECK(r.leakCandidates == 0);
    }
    CHECK(f.events.count("PoolAnomaly") == 1);
    CHECK(f.held(9));
    CHECK(f.fake.pool(kNs, "10.1.0.0-24")->undecoded.at("9").value.dump() == entry->dump());
    CHECK(f.fake.hasReservation(kNs, "10.1.0.9"));
}

TEST_CASE("a static pod's entry, owned through its mirror pod's config.mirror, is never a leak") {
    Fixture f;
    // The kubelet recorded the static pod's own UID (its config hash); the API shows the
    // mirror pod under another UID, with the hash in kubernetes.io/config.mirror.
    f.allocate(7, own("ctr-etcd", "kube-system/etcd-n1", "hash-h"));
    f.fake.putPod("kube-system", "etcd-n1", "mirror-uid", "Running", "hash-h");
    for (int i = 0; i < 5; ++i) {
        auto r = f.pass();
        CHECK(r.leakCandidates == 0);
        CHECK(r.released == 0);
    }
    CHECK(f.held(7));
    // The same pod name with another static pod's hash is another pod: a candidate.
    f.fake.putPod("kube-system", "etcd-n1", "mirror-uid-2", "Running", "hash-x");
    CHECK(f.pass().leakCandidates == 1);
}

TEST_CASE("leadership lost in the middle of a pass: the sweep writes nothing more") {
    Fixture f;
    f.allocate(9, own("ctr-gone", "ns/gone", "u-gone"));
    f.allocate(10, own("ctr-gone2", "ns/gone2", "u-gone2"));
    f.pass();
    f.pass();
    // The Lease is lost after the pass has listed everything, while it sweeps.
    f.fake.afterNextRead("10.1.0.0-24", [&] { f.loop->setLeading(false); });
    auto r = f.pass();
    CHECK(r.released == 0);
    CHECK(f.held(9));
    CHECK(f.held(10));
    CHECK(f.fake.hasReservation(kNs, "10.1.0.9"));
    f.loop->setLeading(true);
    // A new term starts over: seen again on three passes, then released.
    f.pass();
    f.pass();
    CHECK(f.pass().released == 2);
    CHECK_FALSE(f.held(9));
}

TEST_CASE("a pod whose Node is deleted has its addresses released; NotReady ones are held") {
    Fixture f;
    f.opts.leakGrace = 1h;
    f.opts.leakPasses = 1;
    f.make();
    const auto now = std::chrono::system_clock::now();
    f.allocate(20, own("c20", "ns/on-gone-node", "u20", "gone"));
    f.allocate(22, own("c22", "ns/on-dead-node", "u22", "dead"));
    f.allocate(23, own("c23", "ns/on-good-node", "u23", "good"));
    f.fake.putPod("ns", "on-gone-node", "u20", "Running", "", "gone");
    f.fake.putPod("ns", "on-dead-node", "u22", "Running", "", "dead");
    f.fake.putPod("ns", "on-good-node", "u23", "Running", "", "good");
    f.fake.putNode("dead", false, now - 2h);  // NotReady past the grace
    f.fake.putNode("good", true, now - 2h);
    f.fake.putNode("gone", true, now - 2h);
    CHECK(f.pass().leakCandidates == 1);  // dead's pod, to report: gone is still there
    f.fake.removeNode("gone");
    // A pod naming a node no Node object ever had proves nothing (no kubelet's Node at all).
    f.allocate(24, own("c24", "ns/on-no-node", "u24", "never-a-node"));
    f.fake.putPod("ns", "on-no-node", "u24", "Running", "", "never-a-node");
    auto r = f.pass();
    CHECK(r.leakCandidates == 2);
    CHECK(r.released == 0);  // the tracker's own grace
    f.opts.leakGrace = 0ms;
    f.make();
    f.fake.putNode("gone", true, now);
    f.pass();                   // this loop sees "gone" once...
    f.fake.removeNode("gone");  // ...then it is deleted
    f.pass();
    CHECK_FALSE(f.held(20));
    CHECK(f.held(22));
    CHECK(f.held(23));
    CHECK(f.held(24));
    CHECK(f.events.count("AddressReleased") == 1);
}

TEST_CASE("a Running pod on a Node NotReady for an hour keeps its address through 10 passes") {
    Fixture f;
    f.fake.putNode("n2", false, std::chrono::system_clock::now() - 1h);
    f.allocate(5, own("c5", "app/web", "u5", "n2"));
    f.fake.putPod("app", "web", "u5", "Running", "", "n2");
    for (int i = 0; i < 10; ++i) {
        auto r = f.pass();
        CHECK(r.released == 0);
    }
    CHECK(f.held(5));
    CHECK(f.fake.hasReservation(kNs, "10.1.0.5"));
    // Reported once, with the gauges, while it lasts.
    CHECK(f.events.count("AddressHeld") == 1);
    const std::string text = f.metrics.render();
    CHECK(text.find("allot_held_addresses{reason=\"node_not_ready\"} 1") != std::string::npos);
    CHECK(text.find("allot_held_address_oldest_seconds{reason=\"node_not_ready\"}") !=
          std::string::npos);
    // Deleting the Node is Kubernetes' statement that its pods are gone.
    f.fake.removeNode("n2");
    CHECK(f.pass().released == 1);
    CHECK_FALSE(f.held(5));
}

TEST_CASE("an entry whose pod object is gone, on a Node that exists, is its node's to free") {
    Fixture f;
    f.fake.putNode("n2", true);
    f.allocate(5, own("c5", "app/forced", "u5", "n2"));  // kubectl delete --force
    for (int i = 0; i < 6; ++i) CHECK(f.pass().released == 0);
    CHECK(f.held(5));
    CHECK(f.events.count("AddressHeld") == 1);
    CHECK(f.metrics.render().find("allot_held_addresses{reason=\"no_pod\"} 1") !=
          std::string::npos);
}

TEST_CASE("an entry naming no node goes only once every node that reports saw it unused") {
    Fixture f;
    f.fake.putNode("a", true);
    f.fake.putNode("b", true);
    f.allocate(5, own("c5", "app/wb-gone", "", ""));  // written by Whereabouts
    const auto ip = *core::IpAddress::parse("10.1.0.5");
    for (int i = 0; i < 4; ++i) CHECK(f.pass().released == 0);  // nobody reports
    auto now = std::chrono::system_clock::now();
    REQUIRE(f.fake.putNodeReport("", {"a", now, true, {}}).ok());
    REQUIRE(f.fake.putNodeReport("", {"b", now, true, {ip}}).ok());  // a namespace on b holds it
    for (int i = 0; i < 3; ++i) CHECK(f.pass().released == 0);
    // b's probe could not see everything.
    REQUIRE(f.fake.putNodeReport("", {"b", now, false, {}}).ok());
    CHECK(f.pass().released == 0);
    REQUIRE(f.fake.putNodeReport("", {"b", std::chrono::system_clock::now(), true, {}}).ok());
    CHECK(f.pass().released == 1);
    CHECK_FALSE(f.held(5));
    CHECK_FALSE(f.fake.hasReservation(kNs, "10.1.0.5"));
}

TEST_CASE("a pass lists the pods of only the namespaces that allocations point to") {
    Fixture f;
    for (int i = 0; i < 50; ++i)
        f.fake.putPod("busy-" + std::to_string(i % 5), "p" + std::to_string(i), "u");
    f.fake.putPod("app", "web", "uw");
    f.fake.putPod("app", "db", "ud");
    f.allocate(30, own("c30", "app/web", "uw"));
    auto r = f.pass();
    CHECK(r.pods == 1);                   // the pod an allocation names
    CHECK(f.fake.calls("eachPod") == 1);  // one list: app's, not the 50 elsewhere
    CHECK(r.leakCandidates == 0);
    CHECK(f.held(30));
}

namespace {

// A NAD whose IPAM puts the pool of `range` in namespace `poolNs`.
void nadNaming(test::FakeCluster& fake, const std::string& name, const std::string& range,
               const std::string& poolNs) {
    fake.putNad("app", name,
                R"({"cniVersion":"1.1.0","name":")" + name +
                    R"(","type":"macvlan","ipam":{"type":"allot","range":")" + range +
                    R"(","namespace":")" + poolNs + R"("}})");
}

bool anomalyEventIn(test::EventLog& events, const std::string& ns, const std::string& text) {
    for (const auto& e : events.all())
        if (e.reason == "PoolAnomaly" && e.object.ns == ns &&
            e.message.find(text) != std::string::npos)
            return true;
    return false;
}

}  // namespace

TEST_CASE("a pool namespace a NAD names is repaired too: its leak released, its anomaly reported") {
    Fixture f;
    nadNaming(f.fake, "othernet", "10.7.0.0/24", "other-pools");
    f.fake.putPool("other-pools", {"10.7.0.0-24", "10.7.0.0/24", {}, {}, {}});
    auto p = *f.fake.pool("other-pools", "10.7.0.0-24");
    p.allocations[5] = own("c5", "app/gone", "u5");
    p.allocations[300] = own("c300", "app/live", "u300");  // outside a /24
    f.fake.putPool("other-pools", p);
    f.fake.putPod("app", "live", "u300");
    f.fake.putReservation("other-pools", {"10.7.0.5", "c5", "app/gone", "net1", ""});
    f.pass();
    f.pass();
    CHECK(f.fake.pool("other-pools", "10.7.0.0-24")->allocations.count(5) == 1);
    auto r = f.pass();
    CHECK(r.namespaces == 2);
    CHECK(r.released == 1);
    CHECK(f.fake.pool("other-pools", "10.7.0.0-24")->allocations.count(5) == 0);
    CHECK(f.fake.pool("other-pools", "10.7.0.0-24")->allocations.count(300) == 1);
    CHECK_FALSE(f.fake.hasReservation("other-pools", "10.7.0.5"));
    CHECK(r.anomalies["out_of_range"] == 1);
    CHECK(anomalyEventIn(f.events, "other-pools", "out_of_range"));
    CHECK(f.metrics.render().find("namespace=\"other-pools\"") != std::string::npos);
}

TEST_CASE("pools of one name in two namespaces: each namespace's leak streak counts on its own") {
    Fixture f;  // 3 passes
    nadNaming(f.fake, "samerange", "10.1.0.0/24", "other-pools");
    f.fake.putPool("other-pools", {"10.1.0.0-24", "10.1.0.0/24", {}, {}, {}});
    const auto ghost = own("c1", "app/gone", "u1");
    f.allocate(5, ghost);
    f.pass();
    auto p = *f.fake.pool("other-pools", "10.1.0.0-24");
    p.allocations[5] = ghost;  // the same entry, seen from the second pass on
    f.fake.putPool("other-pools", p);
    f.pass();
    CHECK(f.pass().released == 1);
    CHECK_FALSE(f.held(5));
    CHECK(f.fake.pool("other-pools", "10.1.0.0-24")->allocations.count(5) == 1);
    CHECK(f.pass().released == 1);
    CHECK(f.fake.pool("other-pools", "10.1.0.0-24")->allocations.count(5) == 0);
}

TEST_CASE("a namespace that cannot be read fails the pass, not the other namespaces' repairs") {
    Fixture f;
    f.opts.leakPasses = 1;
    f.make();
    nadNaming(f.fake, "othernet", "10.7.0.0/24", "other-pools");
    f.allocate(5, own("c1", "app/gone", "u1"));
    // Namespaces go in name order: other-pools' reservation list fails, pools' goes on.
    f.fake.failNext("eachReservation", 1, core::Errc::Transient);
    auto r = f.loop->pass();
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("namespace other-pools") != std::string::npos);
    CHECK(r.namespaces == 2);
    CHECK(r.released == 1);
    CHECK_FALSE(f.held(5));
}
