#pragma once
// The engine's IpamClaimApi in memory: pods' networks annotations and StatefulSets, claims, and
// every status write in order. For the engine's owned-ADD tests and the plugin's.

#include <map>
#include <string>
#include <vector>

#include "engine/ipam_claim_api.h"
#include "store/memory_store.h"

namespace allot::test {

// The API an ADD with a claim talks to, in memory: pods' networks annotations and claims.
struct FakeClaims {
    std::map<std::string, std::string> networks;  // "ns/pod" -> annotation
    std::map<std::string, core::IpamClaimView> claims;
    std::map<std::string, core::ClaimStatus> written;
    std::map<std::string, core::StatefulSetRef> sets;  // "ns/pod" -> its controlling set
    int podReads = 0;
    // startStatus: false, as without a node relay; true, it writes at once and records what
    // the store held then.
    bool early = false;
    bool refuseStatus = false;  // setStatus answers Forbidden
    store::MemoryStore* mem = nullptr;
    std::vector<std::string> writes;  // "start|set|restore <ips>", in order
    size_t reservationsAtStart = 0, entriesAtStart = 0;
    std::map<std::string, core::IpamClaimView> asRead;  // what claim() answered
};

class FakeClaimApi : public engine::IpamClaimApi {
  public:
    explicit FakeClaimApi(FakeClaims& f) : f_(f) {}
    core::Result<engine::PodFacts> pod(const std::string& ns, const std::string& name) override {
        ++f_.podReads;
        auto it = f_.networks.find(ns + "/" + name);
        if (it == f_.networks.end()) return core::makeError(core::Errc::NotFound, "no pod");
        engine::PodFacts facts{it->second, std::nullopt};
        if (auto s = f_.sets.find(ns + "/" + name); s != f_.sets.end())
            facts.statefulSet = s->second;
        return facts;
    }
    core::Result<core::IpamClaimView> claim(const std::string& ns,
                                            const std::string& name) override {
        auto it = f_.claims.find(ns + "/" + name);
        if (it == f_.claims.end()) return core::makeError(core::Errc::NotFound, "no claim");
        f_.asRead[it->first] = it->second;
        return it->second;
    }
    core::Result<void> setStatus(const std::string& ns, const std::string& name,
                                 const core::ClaimStatus& st) override {
        if (f_.refuseStatus) return core::makeError(core::Errc::Forbidden, "status forbidden");
        f_.written[ns + "/" + name] = st;
        if (st.allocated) f_.claims[ns + "/" + name].ips = st.ips;
        f_.writes.push_back("set " + join(st.ips));
        return {};
    }
    bool startStatus(const std::string& ns, const std::string& name,
                     const core::ClaimStatus& st) override {
        if (!f_.early) return false;
        size_t n = 0;
        (void)f_.mem->eachReservation([&](store::Reservation&) { return ++n, true; });
        f_.reservationsAtStart = n;
        f_.entriesAtStart = f_.mem->getPool("10.0.0.0-29")->allocations.size();
        f_.written[ns + "/" + name] = st;
        f_.claims[ns + "/" + name].ips = st.ips;
        f_.writes.push_back("start " + join(st.ips));
        return true;
    }
    core::Result<void> awaitStatus() override { return {}; }
    core::Result<void> restoreStatus(const std::string& ns, const std::string& name,
                                     const std::vector<std::string>& ips) override {
        if (f_.claims[ns + "/" + name].ips != ips) return {};
        f_.claims[ns + "/" + name] = f_.asRead.at(ns + "/" + name);
        f_.written.erase(ns + "/" + name);
        f_.writes.push_back("restore " + join(f_.claims[ns + "/" + name].ips));
        return {};
    }

  private:
    static std::string join(const std::vector<std::string>& ips) {
        std::string out;
        for (const auto& ip : ips) out += (out.empty() ? "" : ",") + ip;
        return out;
    }
    FakeClaims& f_;
};

}  // namespace allot::test
