#pragma once
// An in-memory Cluster for allot-gc's and kubectl-allot's unit tests: pools and reservations with
// resource versions, pods, NADs, node slices, injected faults, and a hook that runs between a pool
// read and the next write (to play a concurrent ADD). Thread-safe, so one instance can stand
// behind every parallel slot.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"

namespace allot::test {

using core::Errc;
using core::makeError;

class FakeCluster : public cluster::Cluster {
  public:
    // ---- setup
    void putPool(const std::string& ns, store::Pool p) {
        std::lock_guard l(m_);
        p.resourceVersion = std::to_string(++rv_);
        const std::string key = ns + "/" + p.name;
        pools_[key] = std::move(p);
    }
    void putReservation(
        const std::string& ns, store::Reservation r,
        std::chrono::system_clock::time_point created = std::chrono::system_clock::now()) {
        std::lock_guard l(m_);
        r.resourceVersion = std::to_string(++rv_);
        r.created = created;
        const std::string key = ns + "/" + r.name;  // before r is moved from
        res_[key] = std::move(r);
    }
    void putPod(const std::string& ns, const std::string& name, std::string uid,
                std::string phase = "Running", std::string mirrorOf = "", std::string node = "") {
        std::lock_guard l(m_);
        pods_[ns + "/" + name] = cluster::PodInfo{std::move(uid), std::move(phase),
                                                  std::move(mirrorOf), std::move(node)};
    }
    void removePod(const std::string& ns, const std::string& name) {
        std::lock_guard l(m_);
        pods_.erase(ns + "/" + name);
    }
    void putNad(const std::string& ns, const std::string& name, std::string config) {
        std::lock_guard l(m_);
        nads_[ns + "/" + name] = std::move(config);
    }
    void putSlice(const std::string& ns, const std::string& slicePool, const std::string& node,
                  std::string cidr) {
        std::lock_guard l(m_);
        slices_[ns + "/" + slicePool + "/" + node] = std::move(cidr);
    }
    // The next `n` calls of `op` ("getPool", "updatePool", "getPod", "eachPool", ...) fail with
    // `code`.
    void failNext(const std::string& op, int n, Errc code) {
        std::lock_guard l(m_);
        faults_[op] = {n, code};
    }
    // Runs (once) right after the next getPool of `pool`, before the caller can write.
    void afterNextRead(const std::string& pool, std::function<void()> fn) {
        std::lock_guard l(m_);
        afterRead_[pool] = std::move(fn);
    }

    // ---- inspection
    std::optional<store::Pool> pool(const std::string& ns, const std::string& name) {
        std::lock_guard l(m_);
        auto it = pools_.find(ns + "/" + name);
        if (it == pools_.end()) return std::nullopt;
        return it->second;
    }
    bool hasReservation(const std::string& ns, const std::string& name) {
        std::lock_guard l(m_);
        return res_.count(ns + "/" + name) != 0;
    }
    // While hidden, lists of pools and reservations come back empty (a pass that sees only the
    // Nodes); showing them again forgets the calls made meanwhile.
    void hidePools(bool hidden) {
        std::lock_guard l(m_);
        poolsHidden_ = hidden;
        if (!hidden) calls_.clear();
    }
    int calls(const std::string& op) {
        std::lock_guard l(m_);
        return calls_[op];
    }

    // ---- Cluster
    store::PoolStore& pools(const std::string& ns) override {
        std::lock_guard l(m_);
        auto& slot = stores_[ns];
        if (!slot) slot = std::make_unique<NsStore>(*this, ns);
        return *slot;
    }
    core::Result<std::optional<cluster::PodInfo>> getPod(const std::string& ns,
                                                         const std::string& name) override {
        std::lock_guard l(m_);
        if (auto f = fault("getPod")) return *f;
        auto it = pods_.find(ns + "/" + name);
        if (it == pods_.end()) return std::optional<cluster::PodInfo>();
        return std::optional<cluster::PodInfo>(it->second);
    }
    core::Result<void> eachPod(const std::string& ns,
                               const std::function<bool(const std::string&, const std::string&,
                                                        cluster::PodInfo&)>& fn) override {
        std::vector<std::pair<std::string, cluster::PodInfo>> copy;
        {
            std::lock_guard l(m_);
            if (auto f = fault("eachPod")) return *f;
            for (const auto& [k, p] : pods_)
                if (ns.empty() || k.rfind(ns + "/", 0) == 0) copy.emplace_back(k, p);
        }
        for (auto& [k, p] : copy) {
            auto slash = k.find('/');
            if (!fn(k.substr(0, slash), k.substr(slash + 1), p)) break;
        }
        return {};
    }
    core::Result<void> eachNode(
        const std::function<bool(const std::string&, cluster::NodeInfo&)>& fn) override {
        std::map<std::string, cluster::NodeInfo> copy;
        {
            std::lock_guard l(m_);
            if (auto f = fault("eachNode")) return *f;
            copy = nodes_;
        }
        for (auto& [k, n] : copy)
            if (!fn(k, n)) break;
        return {};
    }
    void putNode(const std::string& name, bool ready,
                 std::chrono::system_clock::time_point since = std::chrono::system_clock::now()) {
        std::lock_guard l(m_);
        nodes_[name] = cluster::NodeInfo{ready, since};
    }
    // Taints the Node node.kubernetes.io/out-of-service (core::NodeState::outOfService).
    void setOutOfService(const std::string& name) {
        std::lock_guard l(m_);
        nodes_[name].outOfService = true;
    }
    void removeNode(const std::string& name) {
        std::lock_guard l(m_);
        nodes_.erase(name);
    }
    core::Result<std::optional<std::string>> nodeUid(const std::string& name) override {
        std::lock_guard l(m_);
        if (auto f = fault("nodeUid")) return *f;
        if (!nodes_.count(name)) return std::optional<std::string>();
        return std::optional<std::string>("uid-" + name);
    }
    core::Result<std::vector<core::NodeReport>> nodeReports(const std::string&) override {
        std::lock_guard l(m_);
        if (auto f = fault("nodeReports")) return *f;
        std::vector<core::NodeReport> out;
        for (const auto& [node, r] : reports_) out.push_back(r);
        return out;
    }
    core::Result<void> putNodeReport(const std::string&, const core::NodeReport& r) override {
        std::lock_guard l(m_);
        if (auto f = fault("putNodeReport")) return *f;
        reports_[r.node] = r;
        return {};
    }
    std::optional<core::NodeReport> report(const std::string& node) {
        std::lock_guard l(m_);
        auto it = reports_.find(node);
        if (it == reports_.end()) return std::nullopt;
        return it->second;
    }
    core::Result<std::string> getNadConfig(const std::string& ns,
                                           const std::string& name) override {
        std::lock_guard l(m_);
        if (auto f = fault("getNadConfig")) return *f;
        auto it = nads_.find(ns + "/" + name);
        if (it == nads_.end()) return makeError(Errc::NotFound, "no NAD " + name);
        return it->second;
    }

    core::Result<void> eachNad(const std::function<bool(cluster::NadInfo&)>& fn) override {
        std::vector<cluster::NadInfo> copy;
        {
            std::lock_guard l(m_);
            if (auto f = fault("eachNad")) return *f;
            for (const auto& [k, config] : nads_) {
                auto slash = k.find('/');
                copy.push_back({k.substr(0, slash), k.substr(slash + 1), "uid-" + k, config});
            }
        }
        for (auto& n : copy)
            if (!fn(n)) break;
        return {};
    }

  private:
    // Namespace `ns_` of the fake as a PoolStore (the same faults and hooks, by op name).
    class NsStore : public store::PoolStore {
      public:
        NsStore(FakeCluster& f, std::string ns) : f_(f), ns_(std::move(ns)) {}
        core::Result<store::Pool> getPool(const std::string& name) override {
            std::function<void()> hook;
            core::Result<store::Pool> out = makeError(Errc::Internal, "");
            {
                std::lock_guard l(f_.m_);
                if (auto e = f_.fault("getPool")) return *e;
                auto it = f_.pools_.find(ns_ + "/" + name);
                if (it == f_.pools_.end()) return makeError(Errc::NotFound, "no pool " + name);
                out = it->second;
                if (auto h = f_.afterRead_.find(name); h != f_.afterRead_.end()) {
                    hook = std::move(h->second);
                    f_.afterRead_.erase(h);
                }
            }
            if (hook) hook();
            return out;
        }
        core::Result<store::Pool> createPool(const store::Pool& p) override {
            std::lock_guard l(f_.m_);
            if (auto e = f_.fault("createPool")) return *e;
            auto& slot = f_.pools_[ns_ + "/" + p.name];
            if (!slot.name.empty()) return makeError(Errc::AlreadyExists, p.name);
            slot = p;
            slot.resourceVersion = std::to_string(++f_.rv_);
            return slot;
        }
        core::Result<store::Pool> updatePool(store::Pool p) override {
            std::lock_guard l(f_.m_);
            if (auto e = f_.fault("updatePool")) return *e;
            auto it = f_.pools_.find(ns_ + "/" + p.name);
            if (it == f_.pools_.end()) return makeError(Errc::NotFound, "no pool " + p.name);
            if (it->second.resourceVersion != p.resourceVersion)
                return makeError(Errc::Conflict, "stale " + p.name);
            it->second = p;
            it->second.resourceVersion = std::to_string(++f_.rv_);
            return it->second;
        }
        core::Result<void> eachPool(const std::function<bool(store::Pool&)>& fn,
                                    const BadPool&) override {
            std::vector<store::Pool> copy;
            {
                std::lock_guard l(f_.m_);
                if (auto e = f_.fault("eachPool")) return *e;
                for (const auto& [k, p] : f_.pools_)
                    if (k.rfind(ns_ + "/", 0) == 0 && !f_.poolsHidden_) copy.push_back(p);
            }
            for (auto& p : copy)
                if (!fn(p)) break;
            return {};
        }
        core::Result<store::Reservation> getReservation(const std::string& name) override {
            std::lock_guard l(f_.m_);
            if (auto e = f_.fault("getReservation")) return *e;
            auto it = f_.res_.find(ns_ + "/" + name);
            if (it == f_.res_.end()) return makeError(Errc::NotFound, "no reservation " + name);
            return it->second;
        }
        core::Result<store::Reservation> createReservation(const store::Reservation& r) override {
            std::lock_guard l(f_.m_);
            if (auto e = f_.fault("createReservation")) return *e;
            if (f_.res_.count(ns_ + "/" + r.name)) return makeError(Errc::AlreadyExists, r.name);
            store::Reservation x = r;
            x.resourceVersion = std::to_string(++f_.rv_);
            x.created = std::chrono::system_clock::now();
            f_.res_[ns_ + "/" + r.name] = x;
            return x;
        }
        core::Result<void> deleteReservation(const std::string& name,
                                             const std::string& rv) override {
            std::lock_guard l(f_.m_);
            if (auto e = f_.fault("deleteReservation")) return *e;
            auto it = f_.res_.find(ns_ + "/" + name);
            if (it == f_.res_.end()) return makeError(Errc::NotFound, "no reservation " + name);
            if (!rv.empty() && it->second.resourceVersion != rv)
                return makeError(Errc::Conflict, "stale " + name);
            f_.res_.erase(it);
            return {};
        }
        core::Result<void> eachReservation(
            const std::function<bool(store::Reservation&)>& fn) override {
            std::vector<store::Reservation> copy;
            {
                std::lock_guard l(f_.m_);
                if (auto e = f_.fault("eachReservation")) return *e;
                for (const auto& [k, r] : f_.res_)
                    if (k.rfind(ns_ + "/", 0) == 0 && !f_.poolsHidden_) copy.push_back(r);
            }
            for (auto& r : copy)
                if (!fn(r)) break;
            return {};
        }
        core::Result<store::NodeSlice> nodeSlice(const std::string& pool, const std::string& node,
                                                 bool) override {
            std::lock_guard l(f_.m_);
            auto it = f_.slices_.find(ns_ + "/" + pool + "/" + node);
            if (it == f_.slices_.end()) return makeError(Errc::NotFound, "no slice");
            return store::NodeSlice{it->second, "1"};
        }
        core::Result<void> ping() override { return {}; }

      private:
        FakeCluster& f_;
        std::string ns_;
    };

    std::optional<core::Error> fault(const std::string& op) {
        ++calls_[op];
        auto it = faults_.find(op);
        if (it == faults_.end() || it->second.first <= 0) return std::nullopt;
        --it->second.first;
        return makeError(it->second.second, "injected " + op + " failure");
    }

    std::mutex m_;
    uint64_t rv_ = 0;
    std::map<std::string, store::Pool> pools_;
    std::map<std::string, store::Reservation> res_;
    std::map<std::string, std::unique_ptr<NsStore>> stores_;
    std::map<std::string, cluster::PodInfo> pods_;
    std::map<std::string, cluster::NodeInfo> nodes_;
    std::map<std::string, core::NodeReport> reports_;
    std::map<std::string, std::string> nads_;
    std::map<std::string, std::string> slices_;
    std::map<std::string, std::pair<int, Errc>> faults_;
    std::map<std::string, std::function<void()>> afterRead_;
    std::map<std::string, int> calls_;
    bool poolsHidden_ = false;
};

}  // namespace allot::test
