#include "core/batch.h"

#include <algorithm>
#include <set>

#include "core/ownership.h"

namespace allot::core {

namespace {

Outcome nothingHeld() {
    return Outcome{makeError(Errc::NotFound, "nothing held"), {}};
}

// The release log and clock a batch runs with; no log: no cooldown.
struct Clock {
    ReleaseLog* log = nullptr;
    int64_t now = 0;

    void released(u128 offset) const {
        if (!log || log->keepS <= 0) return;
        log->at[offset] = now;
        if (log->at.size() <= kMaxReleaseLog) return;
        // Full: the release longest ago cools down no more.
        auto oldest = log->at.begin();
        for (auto it = log->at.begin(); it != log->at.end(); ++it)
            if (it->second < oldest->second) oldest = it;
        log->at.erase(oldest);
    }
};

// Drops what cools down no more: past its cooldown, in use again, or dated further ahead than
// a cooldown reaches (another writer's clock, or a hand edit).
void prune(ReleaseLog& log, const AllocationMap& allocs, int64_t now) {
    for (auto it = log.at.begin(); it != log.at.end();) {
        if (it->second + log.keepS <= now || it->second > now + log.keepS ||
            allocs.count(it->first))
            it = log.at.erase(it);
        else
            ++it;
    }
}

Outcome applyTake(AllocationMap& allocs, const Intent& in, BatchResult& res, const Clock& clk) {
    if (!in.window) return Outcome{makeError(Errc::Internal, "a claim without a window"), {}};
    std::set<u128> skip(in.avoid.begin(), in.avoid.end());
    auto held = findHolder(allocs, in.owner.containerId, in.owner.ifName);
    if (held && skip.count(*held)) {
        // Reserved through another pool meanwhile: give it back and pick another.
        allocs.erase(*held);
        res.changed = true;
    }
    const int64_t cooldown = std::min(in.cooldownS, kMaxCooldownS);
    if (clk.log && cooldown > 0) clk.log->keepS = std::max(clk.log->keepS, cooldown);
    auto p = pick(*in.window, allocs,
                  {in.owner, in.requested, in.gateway, &skip, clk.log, cooldown, clk.now});
    const bool kept = p && (p->kind == PickKind::Existing || p->kind == PickKind::Shared);
    if (!p || kept) res.wantsFresh = true;
    if (p && !kept) {
        res.changed = true;
        if (clk.log) clk.log->at.erase(p->offset);
    }
    return Outcome{std::move(p), {}};
}

Outcome applyRelease(const Cidr& cidr, AllocationMap& allocs, const Intent& in, BatchResult& res,
                     const Clock& clk) {
    auto held = findHolder(allocs, in.owner.containerId, in.owner.ifName);
    if (!held) {
        res.wantsFresh = true;
        return nothingHeld();
    }
    if (!mayRelease(allocs.at(*held), false))
        return Outcome{makeError(Errc::NotFound, "kept for IPAMClaim " + allocs.at(*held).claim),
                       {}};
    Outcome out{Pick{cidr.at(*held), *held, PickKind::Existing}, allocs.at(*held)};
    release(allocs, in.owner.containerId, in.owner.ifName);
    clk.released(*held);
    res.changed = true;
    return out;
}

Outcome applyReleaseIfHeld(const Cidr& cidr, AllocationMap& allocs, const Intent& in,
                           BatchResult& res, const Clock& clk) {
    auto it = allocs.find(in.offset);
    if (it == allocs.end() || !heldBy(it->second, in.owner) ||
        !mayRelease(it->second, in.claimGone))
        return nothingHeld();
    Outcome out{Pick{cidr.at(in.offset), in.offset, PickKind::Existing}, it->second};
    allocs.erase(it);
    clk.released(in.offset);
    res.changed = true;
    return out;
}

}  // namespace

BatchResult applyBatch(const Cidr& cidr, AllocationMap& allocs, const std::vector<Intent>& batch,
                       ReleaseLog* log, int64_t now) {
    const Clock clk{log, now};
    if (log) prune(*log, allocs, now);
    BatchResult res;
    res.outcomes.reserve(batch.size());
    for (const Intent& in : batch) {
        switch (in.kind) {
            case Intent::Kind::Take:
                res.outcomes.push_back(applyTake(allocs, in, res, clk));
                break;
            case Intent::Kind::Release:
                res.outcomes.push_back(applyRelease(cidr, allocs, in, res, clk));
                break;
            case Intent::Kind::ReleaseIfHeld:
                res.outcomes.push_back(applyReleaseIfHeld(cidr, allocs, in, res, clk));
                break;
        }
    }
    return res;
}

}  // namespace allot::core
