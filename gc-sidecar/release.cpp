#include "gc-sidecar/release.h"

#include <random>
#include <thread>

#include "core/naming.h"
#include "core/ownership.h"

namespace allot::gc {

using core::Errc;
using core::makeError;

std::vector<std::string> networkNamesFor(const store::Pool& pool, const core::Owner& owner) {
    std::vector<std::string> out;
    auto cidr = core::Cidr::parse(pool.range);
    if (!cidr) return {""};
    const std::string suffix = core::normalizeRange(cidr->str());
    const std::string& name = pool.name;
    if (name == suffix) return {""};
    if (name.size() > suffix.size() + 1 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        name[name.size() - suffix.size() - 1] == '-') {
        std::string prefix = name.substr(0, name.size() - suffix.size() - 1);
        // Node-slice pools are [network_name-]node-range; the reservation carries only
        // network_name.
        if (!owner.node.empty()) {
            if (prefix == owner.node) out.push_back("");
            const std::string tail = "-" + owner.node;
            if (prefix.size() > tail.size() &&
                prefix.compare(prefix.size() - tail.size(), tail.size(), tail) == 0)
                out.push_back(prefix.substr(0, prefix.size() - tail.size()));
        }
        out.push_back(prefix);
        return out;
    }
    return {""};
}

Result<std::vector<Released>> releaseFromPool(Cluster& c, const std::string& ns,
                                              const std::string& poolName, const Selector& select,
                                              int maxAttempts) {
    static thread_local std::minstd_rand rng{std::random_device{}()};
    for (int attempt = 0;; ++attempt) {
        auto pool = c.getPool(ns, poolName);
        if (!pool) {
            if (pool.code() == Errc::NotFound) return std::vector<Released>();
            return pool.error();
        }
        auto cidr = core::Cidr::parse(pool->range);
        if (!cidr)
            return makeError(Errc::Invalid,
                             "IPPool " + ns + "/" + poolName + ": bad range " + pool->range);
        auto offsets = select(*pool);
        if (!offsets) return offsets.error();
        if (offsets->empty()) return std::vector<Released>();
        std::vector<Released> out;
        store::Pool next = *pool;
        for (core::u128 off : *offsets) {
            auto it = next.allocations.find(off);
            if (it == next.allocations.end()) continue;
            out.push_back(Released{ns, poolName, cidr->at(off), off, it->second,
                                   networkNamesFor(*pool, it->second)});
            next.allocations.erase(it);
        }
        if (out.empty()) return out;
        auto written = c.updatePool(ns, next);
        if (written) return out;
        if (written.code() == Errc::NotFound) return std::vector<Released>();
        if (written.code() != Errc::Conflict) return written.error();
        if (attempt + 1 >= maxAttempts)
            return makeError(Errc::Transient, "IPPool " + ns + "/" + poolName +
                                                  ": still conflicting after " +
                                                  std::to_string(maxAttempts) + " attempts");
        // Another writer got there first (an ADD on some node): read again, after a short
        // jittered pause so that writers racing in lockstep drift apart.
        std::uniform_int_distribution<int> d(0, 5 << std::min(attempt, 5));
        std::this_thread::sleep_for(std::chrono::milliseconds(d(rng)));
    }
}

bool ownsReservation(const store::Reservation& r, const core::Owner& owner) {
    return store::reservedFor(r, owner);
}

Result<void> dropReservation(Cluster& c, const Released& r) {
    for (const auto& net : r.networkNames) {
        const std::string name = core::reservationName(r.ip, net);
        auto res = c.getReservation(r.ns, name);
        if (!res) {
            if (res.code() == Errc::NotFound) continue;
            return res.error();
        }
        if (!ownsReservation(*res, r.owner)) continue;  // someone else's claim now
        auto d = c.deleteReservation(r.ns, name, res->resourceVersion);
        if (!d && d.code() != Errc::NotFound && d.code() != Errc::Conflict) return d.error();
        return {};
    }
    return {};
}

}  // namespace allot::gc
