#include "gc-sidecar/base/metrics.h"

#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "core/anomaly.h"

using namespace allot;

namespace {

// The label values `family`'s samples carry for `key`, and how many samples it has.
struct Family {
    std::set<std::string> values;
    size_t samples = 0;
};

Family family(const std::string& text, const std::string& name, const std::string& key) {
    Family f;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) continue;
        ++f.samples;
        const std::string open = key + "=\"";
        const auto at = line.find(open);
        if (at == std::string::npos) continue;
        const auto from = at + open.size();
        f.values.insert(line.substr(from, line.find('"', from) - from));
    }
    return f;
}

// The families whose HELP says "(leader only)", as docs/operations.md marks them.
std::set<std::string> leaderOnlyFamilies(const std::string& text) {
    std::set<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# HELP ", 0) != 0 || line.find("(leader only)") == std::string::npos)
            continue;
        out.insert(line.substr(7, line.find(' ', 7) - 7));
    }
    return out;
}

size_t samplesOf(const std::string& text, const std::set<std::string>& families) {
    size_t n = 0;
    for (const auto& f : families) n += family(text, f, "").samples;
    return n;
}

// A leader's metrics after one pass and one slice controller step, each family non-empty.
void leadAndPass(gc::Metrics& m) {
    m.setLeader(true);
    m.setPools({gc::PoolGauge{"kube-system", "net", 254, 10, 244}});
    m.setNodeSlices({gc::SliceGauge{"kube-system", "net", 4, 1, 0}});
    m.setLeakCandidates(3);
    m.setHeld({{"node_not_ready", {2, 4000}}});
    m.setAnomalies({{"duplicate_ip", 1}});
}

std::set<std::string> anomalyKinds() {
    std::set<std::string> out;
    for (auto k : core::kAnomalyKinds) out.insert(std::string(core::name(k)));
    return out;
}

}  // namespace

TEST_CASE("allot_releases_total shows every release reason at 0 from the start, and no other") {
    gc::Metrics m;
    const std::string text = m.render();
    std::set<std::string> want;
    for (auto r : gc::kReleaseReasons) want.insert(std::string(r));
    CHECK(want.size() == 8);
    const Family got = family(text, "allot_releases_total", "reason");
    CHECK(got.values == want);
    CHECK(got.samples == want.size());
    for (const auto& r : want)
        CHECK_MESSAGE(
            text.find("allot_releases_total{reason=\"" + r + "\"} 0\n") != std::string::npos, r);
}

TEST_CASE("allot_anomalies_total shows every anomaly kind, the leader's and the node's, at 0") {
    gc::Metrics m;
    std::set<std::string> want = anomalyKinds();
    for (auto k : gc::kNodeAnomalyKinds) want.insert(std::string(k));
    CHECK(family(m.render(), "allot_anomalies_total", "kind").values == want);
}

TEST_CASE("a leader's pass shows every anomaly kind and every held reason, 0 where none") {
    gc::Metrics m;
    leadAndPass(m);
    const std::string text = m.render();
    CHECK(family(text, "allot_anomalies", "kind").values == anomalyKinds());
    CHECK(text.find("allot_anomalies{kind=\"duplicate_ip\"} 1\n") != std::string::npos);
    CHECK(text.find("allot_anomalies{kind=\"out_of_range\"} 0\n") != std::string::npos);
    std::set<std::string> reasons;
    for (auto r : core::kLeakReasons) reasons.insert(std::string(core::name(r)));
    CHECK(family(text, "allot_held_addresses", "reason").values == reasons);
    CHECK(family(text, "allot_held_address_oldest_seconds", "reason").values == reasons);
    CHECK(text.find("allot_held_addresses{reason=\"node_not_ready\"} 2\n") != std::string::npos);
    CHECK(text.find("allot_held_addresses{reason=\"no_pod\"} 0\n") != std::string::npos);
    CHECK(text.find("allot_leak_candidates 3\n") != std::string::npos);
}

TEST_CASE("the leader-only families are the pool, slice, leak, held and anomaly gauges") {
    gc::Metrics m;
    CHECK(leaderOnlyFamilies(m.render()) ==
          std::set<std::string>{
              "allot_pool_size", "allot_pool_used", "allot_pool_free", "allot_node_slices",
              "allot_node_slices_free", "allot_nodes_without_slice", "allot_leak_candidates",
              "allot_held_addresses", "allot_held_address_oldest_seconds", "allot_anomalies"});
}

TEST_CASE("a process that never led exports no leader-only series, whatever a loop sets") {
    gc::Metrics m;
    const auto families = leaderOnlyFamilies(m.render());
    CHECK(samplesOf(m.render(), families) == 0);
    m.setPools({gc::PoolGauge{"kube-system", "net", 254, 10, 244}});
    m.setLeakCandidates(3);
    m.setHeld({{"no_pod", {1, 10}}});
    m.setAnomalies({{"duplicate_ip", 1}});
    CHECK(samplesOf(m.render(), families) == 0);
}

TEST_CASE("losing leadership clears every leader-only series; a pass ending after it sets none") {
    gc::Metrics m;
    leadAndPass(m);
    const auto families = leaderOnlyFamilies(m.render());
    for (const auto& f : families)
        CHECK_MESSAGE(family(m.render(), f, "").samples > 0, f << " empty on the leader");
    m.setLeader(false);
    CHECK(samplesOf(m.render(), families) == 0);
    // The pass that was running when the Lease was lost publishes its gauges late.
    m.setPools({gc::PoolGauge{"kube-system", "net", 254, 10, 244}});
    m.setNodeSlices({gc::SliceGauge{"kube-system", "net", 4, 1, 0}});
    m.setLeakCandidates(3);
    m.setHeld({{"no_pod", {1, 10}}});
    m.setAnomalies({{"duplicate_ip", 1}});
    const std::string text = m.render();
    CHECK(samplesOf(text, families) == 0);
    CHECK(text.find("allot_is_leader 0\n") != std::string::npos);
    // The counters stay: they count what this process did.
    CHECK(family(text, "allot_anomalies_total", "kind").samples > 0);
    // Leading again, the next pass shows them again.
    leadAndPass(m);
    CHECK(samplesOf(m.render(), families) > 0);
}
