#include "gc-sidecar/base/metrics.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <utility>

#include "core/anomaly.h"
#include "version/version.h"

namespace allot::gc {

namespace {

std::string escapeLabel(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

void header(std::string& s, const char* name, const char* type, const char* help) {
    s += "# HELP ";
    s += name;
    s += ' ';
    s += help;
    s += "\n# TYPE ";
    s += name;
    s += ' ';
    s += type;
    s += '\n';
}

void line(std::string& s, const std::string& name, const std::string& labels, double v) {
    char buf[64];
    if (v == static_cast<double>(static_cast<uint64_t>(v)) && v < 1e18)
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
    else
        std::snprintf(buf, sizeof buf, "%.6f", v);
    s += name;
    if (!labels.empty()) s += "{" + labels + "}";
    s += ' ';
    s += buf;
    s += '\n';
}

std::string fmtBound(double b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", b);
    return buf;
}

// `name`_bucket/_sum/_count of one histogram, each with `labels` (may be empty).
void histogram(std::string& s, const std::string& name, const std::string& labels,
               const Histogram& h) {
    const std::string sep = labels.empty() ? "" : labels + ",";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
        cumulative += h.counts[i];
        line(s, name + "_bucket", sep + "le=\"" + fmtBound(h.bounds[i]) + "\"",
             static_cast<double>(cumulative));
    }
    line(s, name + "_bucket", sep + "le=\"+Inf\"", static_cast<double>(h.count));
    line(s, name + "_sum", labels, h.sum);
    line(s, name + "_count", labels, static_cast<double>(h.count));
}

std::string label(const char* key, const std::string& v) {
    return std::string(key) + "=\"" + escapeLabel(v) + "\"";
}

// A family of one series without labels.
void single(std::string& s, const char* name, const char* type, const char* help, double v) {
    header(s, name, type, help);
    line(s, name, "", v);
}

// A family with one label: a series per value of `key` in `m`.
void byLabel(std::string& s, const char* name, const char* type, const char* help, const char* key,
             const std::map<std::string, uint64_t>& m) {
    header(s, name, type, help);
    for (const auto& [v, n] : m) line(s, name, label(key, v), static_cast<double>(n));
}

// Bounds in seconds: a repair pass over many pools; one CNI call, milliseconds to the
// runtime's timeouts.
const std::vector<double> kRepairBounds{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
const std::vector<double> kCniBounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                     0.25,  0.5,    1,     2.5,  5,     10,   30};

// Which build serves these metrics, as a constant 1 with the build in its labels (the
// Prometheus convention for build information, as Go programs' *_build_info).
void buildInfo(std::string& s) {
    header(s, "allot_build_info", "gauge",
           "1, labelled with the version and git revision allot-gc was built from.");
    line(s, "allot_build_info",
         "version=\"" + escapeLabel(std::string(version())) + "\",revision=\"" +
             escapeLabel(std::string(revision())) + "\"",
         1);
}

}  // namespace

void Histogram::observe(double v) {
    for (size_t i = 0; i < bounds.size(); ++i)
        if (v <= bounds[i]) {
            ++counts[i];
            break;
        }
    sum += v;
    ++count;
}

Metrics::Metrics() : repairPasses_(kRepairBounds), lastWatch_(Clock::now()) {
    // Always present, so that a rate() over them starts at zero. (The leader-only gauges are
    // seeded when a pass sets them: a process that does not lead shows none of them.)
    for (auto r : kReleaseReasons) releases_[std::string(r)] = 0;
    for (auto k : core::kAnomalyKinds) anomaliesTotal_[std::string(core::name(k))] = 0;
    for (auto k : kNodeAnomalyKinds) anomaliesTotal_[std::string(k)] = 0;
    for (const char* k : {"Transient", "Unauthorized", "Forbidden"}) apiErrors_[k] = 0;
    for (const char* k : {"runtime", "namespaces", "none"}) sandboxProof_[k] = 0;
    for (const char* k : {"not_found", "not_ready", "ready", "unknown"}) runtimeAnswers_[k] = 0;
    for (const char* k : {"api_unreachable", "other_server", "not_a_pool_request"})
        relayRefused_[k] = 0;
}

void Metrics::addReleases(const std::string& reason, uint64_t n) {
    std::lock_guard l(m_);
    assert(releases_.count(reason) && "a reason missing from kReleaseReasons");
    releases_[reason] += n;
}
void Metrics::setSandboxProof(const std::string& proof) {
    std::lock_guard l(m_);
    for (auto& [k, v] : sandboxProof_) v = k == proof ? 1 : 0;
}
void Metrics::addRuntimeAnswer(const std::string& answer) {
    std::lock_guard l(m_);
    ++runtimeAnswers_[answer];
}
void Metrics::addReleaseFailure() {
    ++releaseFailures_;
}
void Metrics::addAnomalyFound(const std::string& kind) {
    std::lock_guard l(m_);
    assert(anomaliesTotal_.count(kind) && "a kind missing from kAnomalyKinds/kNodeAnomalyKinds");
    ++anomaliesTotal_[kind];
}
void Metrics::setAnomalies(const std::map<std::string, uint64_t>& current) {
    std::lock_guard l(m_);
    if (!leader_) return;
    lead_.anomalies.clear();
    for (auto k : core::kAnomalyKinds) lead_.anomalies[std::string(core::name(k))] = 0;
    for (const auto& [kind, n] : current) lead_.anomalies[kind] = n;
}
void Metrics::setLeakCandidates(uint64_t n) {
    std::lock_guard l(m_);
    if (leader_) lead_.leakCandidates = n;
}
void Metrics::setHeld(const std::map<std::string, std::pair<uint64_t, double>>& byReason) {
    std::lock_guard l(m_);
    if (!leader_) return;
    lead_.held.clear();
    for (auto r : core::kLeakReasons) lead_.held[std::string(core::name(r))] = {0, 0};
    for (const auto& [reason, h] : byReason) lead_.held[reason] = h;
}
void Metrics::repairPassDone(double seconds) {
    std::lock_guard l(m_);
    lastPassSeconds_ = seconds;
    repairPasses_.observe(seconds);
    lastPass_ = Clock::now();
}
void Metrics::addApiError(const std::string& kind) {
    std::lock_guard l(m_);
    ++apiErrors_[kind];
}
void Metrics::addApiThrottled() {
    ++apiThrottled_;
}
void Metrics::addRelayRefused(const std::string& why) {
    std::lock_guard l(m_);
    ++relayRefused_[why];
}
void Metrics::observeCni(const CniCall& call) {
    const std::string key = label("command", call.command) + "," + label("network", call.network) +
                            "," + label("outcome", call.outcome);
    std::lock_guard l(m_);
    auto it = cniCalls_.try_emplace(key, kCniBounds).first;
    it->second.observe(call.seconds);
}
void Metrics::setJournalBacklog(uint64_t entries) {
    std::lock_guard l(m_);
    journalBacklog_ = entries;
}
void Metrics::setPrunedFields(std::map<std::string, uint64_t> fields) {
    std::lock_guard l(m_);
    prunedFields_ = std::move(fields);
}
void Metrics::setPluginTokenExpiry(double unixSeconds) {
    std::lock_guard l(m_);
    pluginTokenExpiry_ = unixSeconds;
}
void Metrics::addWatchRestart() {
    ++watchRestarts_;
}
void Metrics::addEventDropped() {
    ++eventsDropped_;
}
void Metrics::addJournalFailure() {
    ++journalFailures_;
}
void Metrics::setLeader(bool leader) {
    std::lock_guard l(m_);
    if (leader && !leader_) leaderSince_ = Clock::now();
    // Only the leader's view is current: the one place its families are cleared.
    if (!leader) lead_ = {};
    leader_ = leader;
}
void Metrics::setPools(std::vector<PoolGauge> pools) {
    std::lock_guard l(m_);
    if (leader_) lead_.pools = std::move(pools);
}
void Metrics::setNodeSlices(std::vector<SliceGauge> slices) {
    std::lock_guard l(m_);
    if (leader_) lead_.slices = std::move(slices);
}
void Metrics::watchProgress(const char* source) {
    std::lock_guard l(m_);
    lastWatch_ = Clock::now();
    progressSource_ = source;
}
void Metrics::setReady() {
    ready_ = true;
}

std::string Metrics::unhealthyReason(std::chrono::milliseconds threshold,
                                     std::chrono::milliseconds repairInterval) const {
    std::lock_guard l(m_);
    const auto now = Clock::now();
    auto ms = [](Clock::duration d) {
        return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) +
               "ms";
    };
    if (now - lastWatch_ > threshold)
        return std::string(progressSource_) + " made no progress for " + ms(now - lastWatch_);
    if (leader_) {
        // A new leader gets one interval for its first pass.
        const auto since = std::max(lastPass_, leaderSince_);
        if (now - since > threshold + repairInterval)
            return "repair loop made no progress for " + ms(now - since);
    }
    return {};
}

uint64_t Metrics::releases(const std::string& reason) const {
    std::lock_guard l(m_);
    auto it = releases_.find(reason);
    return it == releases_.end() ? 0 : it->second;
}

uint64_t Metrics::anomaliesFound(const std::string& kind) const {
    std::lock_guard l(m_);
    auto it = anomaliesTotal_.find(kind);
    return it == anomaliesTotal_.end() ? 0 : it->second;
}

// Called with m_ held.
void Metrics::renderSlices(std::string& s) const {
    auto labels = [](const SliceGauge& g) {
        return "namespace=\"" + escapeLabel(g.ns) + "\",pool=\"" + escapeLabel(g.pool) + "\"";
    };
    header(s, "allot_node_slices", "gauge",
           "Slices in the NodeSlicePool's range, by the slice controller (leader only).");
    for (const auto& g : lead_.slices)
        line(s, "allot_node_slices", labels(g), static_cast<double>(g.total));
    header(s, "allot_node_slices_free", "gauge", "Slices no Node holds (leader only).");
    for (const auto& g : lead_.slices)
        line(s, "allot_node_slices_free", labels(g), static_cast<double>(g.free));
    header(s, "allot_nodes_without_slice", "gauge",
           "Nodes left without a slice: more Nodes than slices (leader only).");
    for (const auto& g : lead_.slices)
        line(s, "allot_nodes_without_slice", labels(g), static_cast<double>(g.nodesWithout));
}

void Metrics::renderPools(std::string& s) const {
    auto labels = [](const PoolGauge& p) {
        return label("namespace", p.ns) + "," + label("pool", p.pool);
    };
    header(s, "allot_pool_size", "gauge",
           "Allocatable addresses in the pool's range (leader only).");
    for (const auto& p : lead_.pools)
        line(s, "allot_pool_size", labels(p), static_cast<double>(p.size));
    header(s, "allot_pool_used", "gauge", "Allocated addresses in the pool (leader only).");
    for (const auto& p : lead_.pools)
        line(s, "allot_pool_used", labels(p), static_cast<double>(p.used));
    header(s, "allot_pool_free", "gauge", "Free addresses in the pool (leader only).");
    for (const auto& p : lead_.pools)
        line(s, "allot_pool_free", labels(p), static_cast<double>(p.free));
}

void Metrics::renderHeld(std::string& s) const {
    header(s, "allot_leak_candidates", "gauge",
           "Allocations seen leaked by the last repair pass, not yet released (leader only).");
    if (lead_.leakCandidates)
        line(s, "allot_leak_candidates", "", static_cast<double>(*lead_.leakCandidates));
    header(s, "allot_held_addresses", "gauge",
           "Addresses whose pod looks gone or whose Node is NotReady, kept because only their "
           "node may prove them unused, by reason (leader only).");
    for (const auto& [r, h] : lead_.held)
        line(s, "allot_held_addresses", label("reason", r), static_cast<double>(h.first));
    header(s, "allot_held_address_oldest_seconds", "gauge",
           "Age of the oldest held address (allot_held_addresses), by reason (leader only).");
    for (const auto& [r, h] : lead_.held)
        line(s, "allot_held_address_oldest_seconds", label("reason", r), h.second);
    byLabel(s, "allot_anomalies_total", "counter",
            "Pool anomalies found (each counted once, when first seen), by kind.", "kind",
            anomaliesTotal_);
    byLabel(s, "allot_anomalies", "gauge",
            "Pool anomalies present at the last repair pass, by kind (leader only).", "kind",
            lead_.anomalies);
}

void Metrics::renderRepair(std::string& s) const {
    header(s, "allot_repair_pass_duration_seconds", "histogram",
           "Duration of the repair passes this process led.");
    histogram(s, "allot_repair_pass_duration_seconds", "", repairPasses_);
    single(s, "allot_repair_last_pass_duration_seconds", "gauge",
           "Duration of the last repair pass this process led.", lastPassSeconds_);
    header(s, "allot_is_leader", "gauge", "1 while this sidecar leads the repair loop.");
    line(s, "allot_is_leader", "", leader_ ? 1 : 0);
}

// What this node's plugin and relay did, and the node's own state.
void Metrics::renderNode(std::string& s) const {
    header(s, "allot_cni_request_duration_seconds", "histogram",
           "ADD and DEL calls of this node's plugin, as it reported them to the relay, by "
           "command, network and outcome (ok, or cni_<code>).");
    for (const auto& [labels, h] : cniCalls_)
        histogram(s, "allot_cni_request_duration_seconds", labels, h);
    byLabel(s, "allot_relay_refused_total", "counter",
            "Plugin requests the relay did not carry, by why (the plugin then went direct).",
            "reason", relayRefused_);
    byLabel(s, "allot_sandbox_proof", "gauge",
            "1 for the proof this node's allot-gc frees a deleted pod's address on: runtime (the "
            "container runtime's word, over CRI), namespaces (the network namespace probe alone), "
            "none (neither: only the runtime's DEL frees).",
            "proof", sandboxProof_);
    byLabel(s, "allot_runtime_answers_total", "counter",
            "What the container runtime answered about the sandboxes of addresses to release.",
            "answer", runtimeAnswers_);
    single(s, "allot_journal_backlog", "gauge",
           "Releases the plugin journaled on this node that are not replayed yet.",
           static_cast<double>(journalBacklog_));
    byLabel(s, "allot_ippool_field_pruned", "gauge",
            "1 for each of allot's optional IPPool entry fields the cluster's IPPool schema drops "
            "(0: kept), as probed at start.",
            "field", prunedFields_);
    single(s, "allot_plugin_token_expiry_timestamp_seconds", "gauge",
           "When the token in the plugin's kubeconfig on this node expires (Unix time; 0 when "
           "unknown). Past it, every ADD on the node fails.",
           pluginTokenExpiry_);
}

std::string Metrics::render() const {
    std::lock_guard l(m_);
    std::string s;
    s.reserve(8192 + lead_.pools.size() * 256 + cniCalls_.size() * 1024);
    buildInfo(s);
    renderPools(s);
    renderSlices(s);
    header(s, "allot_releases_total", "counter", "Addresses released, by reason.");
    for (const auto& [r, n] : releases_)
        line(s, "allot_releases_total", label("reason", r), static_cast<double>(n));
    single(s, "allot_release_failures_total", "counter",
           "Releases given up after every retry (ReleaseFailed Events).",
           static_cast<double>(releaseFailures_.load()));
    renderHeld(s);
    renderRepair(s);
    byLabel(s, "allot_api_errors_total", "counter",
            "Failed API requests (not counting NotFound and Conflict), by kind of failure.", "kind",
            apiErrors_);
    single(s, "allot_api_throttled_total", "counter",
           "API requests answered 429 Too Many Requests (API priority and fairness).",
           static_cast<double>(apiThrottled_.load()));
    single(s, "allot_watch_restarts_total", "counter",
           "Pod watch restarts after an error or a 410 Gone.",
           static_cast<double>(watchRestarts_.load()));
    single(s, "allot_events_dropped_total", "counter",
           "Kubernetes Events not recorded (queue full or API error).",
           static_cast<double>(eventsDropped_.load()));
    single(s, "allot_journal_failures_total", "counter",
           "Journal entries whose replay failed (retried later).",
           static_cast<double>(journalFailures_.load()));
    renderNode(s);
    header(s, "allot_ready", "gauge", "1 after the first full sync.");
    line(s, "allot_ready", "", ready_ ? 1 : 0);
    return s;
}

}  // namespace allot::gc
