#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <sstream>

#include "../cluster/fake_cluster.h"
#include "core/naming.h"
#include "event_log.h"
#include "gc-sidecar/base/events.h"
#include "gc-sidecar/base/metrics.h"
#include "gc-sidecar/daemon/node_kubeconfig.h"
#include "gc-sidecar/daemon/schema_probe.h"
#include "gc-sidecar/leader/lease.h"
#include "gc-sidecar/node/pod_watch.h"
#include "gc-sidecar/rules/release.h"
#include "k8s/kubeconfig.h"
#include "k8s_api/timestamp.h"
#include "version/version.h"

using namespace allot;
using namespace std::chrono_literals;

TEST_CASE("Kubernetes timestamps round-trip, with and without microseconds") {
    auto t = k8s::parseTime("2024-02-29T23:59:58Z");
    REQUIRE(t);
    CHECK(k8s::formatTime(*t) == "2024-02-29T23:59:58Z");
    auto m = k8s::parseTime("2024-02-29T23:59:58.123456Z");
    REQUIRE(m);
    CHECK(k8s::formatMicroTime(*m) == "2024-02-29T23:59:58.123456Z");
    CHECK(*m - *t == 123456us);
    for (const char* bad : {"", "2024-02-29", "2024-02-29T23:59:58+01:00", "2024-02-29T23:59:5xZ"})
        CHECK_FALSE(k8s::parseTime(bad));
}

TEST_CASE(
    "the node kubeconfig is JSON that the plugin loads: server, CA, token and the pool namespace") {
    CHECK(k8s::base64Encode("") == "");
    CHECK(k8s::base64Encode("f") == "Zg==");
    CHECK(k8s::base64Encode("fo") == "Zm8=");
    CHECK(k8s::base64Encode("foo") == "Zm9v");
    const std::string k =
        gc::renderNodeKubeconfig("https://10.96.0.1:443", "PEM", "tok\"en", "kube-system");
    // JSON, read back by the plugin's own loader.
    char path[] = "/tmp/allot-node-kubeconfig-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, k.data(), k.size()) == static_cast<ssize_t>(k.size()));
    ::close(fd);
    auto cfg = k8s::loadKubeconfig(path);
    ::unlink(path);
    REQUIRE(cfg.ok());
    CHECK(cfg->server == "https://10.96.0.1:443");
    CHECK(cfg->caData == "PEM");
    CHECK(cfg->token == "tok\"en");
    CHECK(cfg->namespace_ == "kube-system");
    CHECK(cfg->identity == "user \"allot\" of context \"allot\"");
    CHECK(k.front() == '{');
}

TEST_CASE("lease decisions: free, released, ours, or observed unrenewed for its duration") {
    gc::LeaseRecord r{"other", 15, "", "", 0};
    CHECK_FALSE(gc::mayAcquire(r, "me", 14s));
    CHECK(gc::mayAcquire(r, "me", 15s));
    CHECK(gc::mayAcquire({"", 15, "", "", 0}, "me", 0s));
    CHECK(gc::mayAcquire({"me", 15, "", "", 0}, "me", 0s));
    json::Value lease = json::Value::object();
    gc::setLeaseRecord(lease,
                       {"a", 3, "2024-01-01T00:00:00.000000Z", "2024-01-01T00:00:01.000000Z", 4});
    auto back = gc::leaseRecordOf(lease);
    CHECK(back.holder == "a");
    CHECK(back.durationSeconds == 3);
    CHECK(back.transitions == 4);
    gc::setLeaseRecord(lease, {"", 1, "", "", 4});
    CHECK(lease.find("spec")->find("holderIdentity") == nullptr);
}

TEST_CASE("a first sight of a Lease is dated by its renewTime, but leaves a renewal to be seen") {
    using namespace std::chrono;
    const auto wall = k8s::parseTime("2026-12-05T10:00:30.000000Z");
    REQUIRE(wall);
    auto age = [&](const char* renewed, int64_t duration) {
        return gc::firstSightAge({"other", duration, "", renewed, 0}, *wall, 5s);
    };
    // Renewed 2 s ago: dated 2 s back, as a candidate polling since then would have.
    CHECK(age("2026-12-05T10:00:28.000000Z", 15) == 2s);
    // Renewed 20 s ago (a holder that stopped renewing): at most 15 - 5 - 1 = 9 s back, so the
    // candidate still waits 6 s, past the next renewal a live holder would make.
    CHECK(age("2026-12-05T10:00:10.000000Z", 15) == 9s);
    // In the future (this clock is behind), missing, unreadable: its first sight is now.
    CHECK(age("2026-12-05T10:00:40.000000Z", 15) == 0s);
    CHECK(age("", 15) == 0s);
    CHECK(age("yesterday", 15) == 0s);
    // A duration too short to leave a renewal interval: never back-dated.
    CHECK(age("2026-12-05T10:00:10.000000Z", 5) == 0s);
    // With the Lease's duration: 15 s unrenewed for 9 s of back-dating and 6 s of waiting.
    CHECK_FALSE(gc::mayAcquire({"other", 15, "", "", 0}, "me",
                               age("2026-12-05T10:00:10.000000Z", 15) + 5s));
    CHECK(gc::mayAcquire({"other", 15, "", "", 0}, "me",
                         age("2026-12-05T10:00:10.000000Z", 15) + 6s));
}

TEST_CASE("pod records keep only namespace, name, uid and the network-status annotation") {
    auto pod = json::parse(R"({"metadata":{"namespace":"a","name":"p","uid":"u","labels":{"x":"y"},
        "annotations":{"k8s.v1.cni.cncf.io/network-status":"[]","other":"z"}},"spec":{"nodeName":"n"}})");
    REQUIRE(pod.ok());
    auto r = gc::podRecordOf(*pod);
    REQUIRE(r);
    CHECK(r->ns == "a");
    CHECK(r->uid == "u");
    CHECK(r->hasNetworkStatus);
    CHECK(r->networkStatus == "[]");
    CHECK_FALSE(gc::podRecordOf(*json::parse(R"({"metadata":{"name":"p"}})")));
    auto bare =
        gc::podRecordOf(*json::parse(R"({"metadata":{"namespace":"a","name":"p","uid":"u"}})"));
    REQUIRE(bare);
    CHECK_FALSE(bare->hasNetworkStatus);
}

TEST_CASE("Events name the object, the reason and the message, as core/v1 Events") {
    cluster::EventSpec e{true, "PoolAnomaly", "duplicate_ip: 10.0.0.5",
                         cluster::poolRef("kube-system", "10.0.0.0-24")};
    auto v =
        cluster::eventObject(e, "node-1", "node-1", std::chrono::system_clock::time_point{} + 1h);
    CHECK(v.find("type")->asString() == "Warning");
    CHECK(v.find("reason")->asString() == "PoolAnomaly");
    CHECK(v.find("metadata")->find("namespace")->asString() == "kube-system");
    CHECK(v.find("involvedObject")->find("kind")->asString() == "IPPool");
    CHECK(v.find("source")->find("component")->asString() == "allot-gc");
    CHECK(v.find("firstTimestamp")->asString() == "1970-01-01T01:00:00Z");
}

TEST_CASE("a release in a slice part drops the address's reservation, named as part 0's") {
    test::FakeCluster c;
    const core::Owner o{"c5", "ns/p", "net1", "worker-1", "u", "blue"};
    const std::string part = "blue-worker-1-10.0.3.0-24-part-1";
    c.putPool("pools", {part, "10.0.3.0/24", {{5, o}}, {}, {}});
    c.putReservation("pools", {"blue-10.0.3.5", "c5", "ns/p", "net1", ""});
    auto rel = cluster::releaseFromPool(c, "pools", part, [](const store::Pool&) {
        return core::Result<std::vector<core::u128>>(std::vector<core::u128>{5});
    });
    REQUIRE(rel.ok());
    REQUIRE(rel->size() == 1);
    CHECK(c.pool("pools", part)->allocations.empty());
    REQUIRE(cluster::dropReservation(c, (*rel)[0]).ok());
    CHECK_FALSE(c.hasReservation("pools", "blue-10.0.3.5"));
}

TEST_CASE("health: the watch's progress and, for the leader, the repair loop's") {
    gc::Metrics m;
    CHECK(m.unhealthyReason(1h, 1min).empty());
    CHECK_FALSE(m.unhealthyReason(0ms, 1min).empty());
    m.setLeader(true);
    m.watchProgress();
    CHECK(m.unhealthyReason(1h, 1min).empty());
    CHECK_FALSE(m.ready());
    m.setReady();
    CHECK(m.ready());
    const std::string text = m.render();
    for (const char* s :
         {"allot_releases_total{reason=\"pod_deleted\"} 0", "allot_is_leader 1",
          "allot_api_errors_total{kind=\"Transient\"} 0", "allot_watch_restarts_total 0",
          "# TYPE allot_repair_pass_duration_seconds histogram"})
        CHECK_MESSAGE(text.find(s) != std::string::npos, s);
}

TEST_CASE("no gauge is named as a counter: a _total name is a counter's") {
    gc::Metrics m;
    m.setLeader(true);
    m.setNodeSlices({gc::SliceGauge{"kube-system", "net", 4, 1, 0}});
    const std::string text = m.render();
    CHECK(text.find("allot_node_slices{namespace=\"kube-system\",pool=\"net\"} 4") !=
          std::string::npos);
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# TYPE ", 0) != 0) continue;
        std::istringstream f(line.substr(7));
        std::string name, type;
        f >> name >> type;
        const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
        if (type == "gauge") CHECK_MESSAGE(!total, name << " is a gauge named as a counter");
    }
}

TEST_CASE(
    "the metrics say which build serves them: allot_build_info with its version and revision") {
    gc::Metrics m;
    const std::string text = m.render();
    CHECK(text.find("# TYPE allot_build_info gauge\n") != std::string::npos);
    CHECK(text.find("\nallot_build_info{version=\"" + std::string(allot::version()) +
                    "\",revision=\"" + std::string(allot::revision()) + "\"} 1\n") !=
          std::string::npos);
}

TEST_CASE("a plugin token is kept until half its hour has passed, then renewed") {
    using namespace std::chrono;
    // allot-gc checks every 30 s; each check used to request a new token.
    CHECK_FALSE(gc::pluginTokenDue(seconds(0)));
    CHECK_FALSE(gc::pluginTokenDue(seconds(30)));
    CHECK_FALSE(gc::pluginTokenDue(minutes(29)));
    CHECK(gc::pluginTokenDue(minutes(30)));
    CHECK(gc::pluginTokenDue(minutes(59)));
}

TEST_CASE("durations are histograms: cumulative buckets, +Inf, sum and count") {
    gc::Metrics m;
    m.repairPassDone(0.3);
    m.repairPassDone(7);
    m.observeCni(gc::CniCall{"ADD", "blue", "ok", 0.004});
    m.observeCni(gc::CniCall{"ADD", "blue", "ok", 0.02});
    m.observeCni(gc::CniCall{"DEL", "blue", "cni_11", 12});
    const std::string text = m.render();
    for (const char* s :
         {"allot_repair_pass_duration_seconds_bucket{le=\"0.25\"} 0",
          "allot_repair_pass_duration_seconds_bucket{le=\"0.5\"} 1",
          "allot_repair_pass_duration_seconds_bucket{le=\"10\"} 2",
          "allot_repair_pass_duration_seconds_bucket{le=\"+Inf\"} 2",
          "allot_repair_pass_duration_seconds_sum 7.300000",
          "allot_repair_pass_duration_seconds_count 2", "allot_repair_last_pass_duration_seconds 7",
          "allot_cni_request_duration_seconds_bucket{command=\"ADD\",network=\"blue\",outcome="
          "\"ok\","
          "le=\"0.005\"} 1",
          "allot_cni_request_duration_seconds_bucket{command=\"ADD\",network=\"blue\",outcome="
          "\"ok\","
          "le=\"0.025\"} 2",
          "allot_cni_request_duration_seconds_count{command=\"ADD\",network=\"blue\",outcome="
          "\"ok\"} 2",
          "allot_cni_request_duration_seconds_bucket{command=\"DEL\",network=\"blue\",outcome="
          "\"cni_11\",le=\"10\"} 0",
          "allot_cni_request_duration_seconds_count{command=\"DEL\",network=\"blue\",outcome="
          "\"cni_11\"} 1"})
        CHECK_MESSAGE(text.find(s) != std::string::npos, s);
}

TEST_CASE("API errors by kind, 429s, relay refusals, journal backlog and token expiry are shown") {
    gc::Metrics m;
    m.addApiError("Forbidden");
    m.addApiError("Forbidden");
    m.addApiThrottled();
    m.addRelayRefused("api_unreachable");
    m.setJournalBacklog(3);
    m.setPluginTokenExpiry(1800000000);
    const std::string text = m.render();
    for (const char* s :
         {"allot_api_errors_total{kind=\"Forbidden\"} 2",
          "allot_api_errors_total{kind=\"Unauthorized\"} 0", "allot_api_throttled_total 1",
          "allot_relay_refused_total{reason=\"api_unreachable\"} 1",
          "allot_relay_refused_total{reason=\"other_server\"} 0", "allot_journal_backlog 3",
          "allot_plugin_token_expiry_timestamp_seconds 1800000000"})
        CHECK_MESSAGE(text.find(s) != std::string::npos, s);
}

TEST_CASE("a token's expiry is its JWT exp claim; anything else has none") {
    // {"alg":"none"} . {"exp":1800000000,"sub":"x"} . (no signature)
    const std::string payload = k8s::base64Encode(R"({"exp":1800000000,"sub":"x"})");
    std::string url;
    for (char c : payload)
        if (c != '=') url += c == '+' ? '-' : c == '/' ? '_' : c;
    CHECK(gc::jwtExpiry("eyJhbGciOiJub25lIn0." + url + ".") == 1800000000);
    CHECK_FALSE(gc::jwtExpiry("not-a-jwt"));
    CHECK_FALSE(gc::jwtExpiry("a." + k8s::base64Encode(R"({"sub":"x"})") + ".b"));
    CHECK_FALSE(gc::jwtExpiry("a.!!!.b"));
    CHECK_FALSE(gc::jwtExpiry("a." + k8s::base64Encode(R"({"exp":"soon"})") + ".b"));
}

TEST_CASE("the IPPool schema probe names each optional entry field the answer dropped") {
    const json::Value sent = gc::probePool("kube-system");
    // allot's CRD keeps the entries as sent.
    auto kept = gc::droppedFields(sent);
    REQUIRE(kept.ok());
    CHECK(kept->empty());
    // Whereabouts' own schema keeps id, podref and ifname only.
    json::Value pruned = sent;
    json::Value& entry = *pruned.find("spec")->find("allocations")->find("1");
    json::Value only = json::Value::object();
    for (const char* f : {"id", "podref", "ifname"}) only.set(f, *entry.find(f));
    entry = only;
    auto dropped = gc::droppedFields(pruned);
    REQUIRE(dropped.ok());
    CHECK(*dropped == gc::optionalEntryFields());
    const std::string msg = gc::prunedMessage(*dropped);
    CHECK(msg.find("node, poduid, network, ipamclaim") != std::string::npos);
    // An answer without the entry proves nothing.
    json::Value empty = sent;
    empty.find("spec")->set("allocations", json::Value::object());
    CHECK_FALSE(gc::droppedFields(empty).ok());
    CHECK_FALSE(gc::droppedFields(json::Value::string("x")).ok());
}

TEST_CASE("allot_ippool_field_pruned shows one series per optional field once probed") {
    gc::Metrics m;
    CHECK(m.render().find("allot_ippool_field_pruned{") == std::string::npos);
    m.setPrunedFields({{"node", 1}, {"poduid", 0}});
    const std::string text = m.render();
    CHECK(text.find("allot_ippool_field_pruned{field=\"node\"} 1") != std::string::npos);
    CHECK(text.find("allot_ippool_field_pruned{field=\"poduid\"} 0") != std::string::npos);
}
