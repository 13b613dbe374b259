#include "core/batch.h"

#include <set>

#include "core/ownership.h"

namespace allot::core {

namespace {

Outcome nothingHeld() {
    return Outcome{makeError(Errc::NotFound, "nothing held"), {}};
}

Outcome applyClaim(AllocationMap& allocs, const Intent& in, BatchResult& res) {
    if (!in.window) return Outcome{makeError(Errc::Internal, "a claim without a window"), {}};
    std::set<u128> skip(in.avoid.begin(), in.avoid.end());
    auto held = findHolder(allocs, in.owner.containerId, in.owner.ifName);
    if (held && skip.count(*held)) {
        // Reserved through another pool meanwhile: give it back and pick another.
        allocs.erase(*held);
        res.changed = true;
    }
    auto p = pick(*in.window, allocs, {in.owner, in.requested, in.gateway, &skip});
    if (!p || p->kind == PickKind::Existing) res.wantsFresh = true;
    if (p && p->kind != PickKind::Existing) res.changed = true;
    return Outcome{std::move(p), {}};
}

Outcome applyRelease(const Cidr& cidr, AllocationMap& allocs, const Intent& in, BatchResult& res) {
    auto held = findHolder(allocs, in.owner.containerId, in.owner.ifName);
    if (!held) {
        res.wantsFresh = true;
        return nothingHeld();
    }
    Outcome out{Pick{cidr.at(*held), *held, PickKind::Existing}, allocs.at(*held)};
    release(allocs, in.owner.containerId, in.owner.ifName);
    res.changed = true;
    return out;
}

Outcome applyReleaseIfHeld(const Cidr& cidr, AllocationMap& allocs, const Intent& in,
                           BatchResult& res) {
    auto it = allocs.find(in.offset);
    if (it == allocs.end() || !heldBy(it->second, in.owner)) return nothingHeld();
    Outcome out{Pick{cidr.at(in.offset), in.offset, PickKind::Existing}, it->second};
    allocs.erase(it);
    res.changed = true;
    return out;
}

}  // namespace

BatchResult applyBatch(const Cidr& cidr, AllocationMap& allocs, const std::vector<Intent>& batch) {
    BatchResult res;
    res.outcomes.reserve(batch.size());
    for (const Intent& in : batch) {
        switch (in.kind) {
            case Intent::Kind::Claim:
                res.outcomes.push_back(applyClaim(allocs, in, res));
                break;
            case Intent::Kind::Release:
                res.outcomes.push_back(applyRelease(cidr, allocs, in, res));
                break;
            case Intent::Kind::ReleaseIfHeld:
                res.outcomes.push_back(applyReleaseIfHeld(cidr, allocs, in, res));
                break;
        }
    }
    return res;
}

}  // namespace allot::core
