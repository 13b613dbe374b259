#include "engine/owned_add.h"

#include <algorithm>

#include "cni/network_selection.h"
#include "core/sticky.h"
#include "engine/add.h"

namespace allot::engine {

using core::Errc;
using core::makeError;
using core::Result;
using Addresses = std::vector<IpResult>;
using cni::NetConf;

namespace {

// The pod this call is for; NotFound is Transient (CNI 11: the runtime retries).
Result<PodFacts> readPod(IpamClaimApi& api, const PodCall& call, std::string_view why) {
    auto pod = api.pod(call.podNamespace, call.podName);
    if (!pod && pod.code() == Errc::NotFound)
        return makeError(Errc::Transient, "pod " + call.podNamespace + "/" + call.podName +
                                              " not found (" + std::string(why) +
                                              " is read from it)");
    return pod;
}

// args.cni's claim reference (a cni-args map Multus copies), checked; "" when there is none.
Result<std::string> argsClaimName(const NetConf& net) {
    if (net.claimRef.empty()) return std::string();
    return core::claimName(net.claimRef, "args.cni ipam-claim-reference");
}

// The StatefulSet that owns this pod's address: its controller, when the pod's name is one
// the set gives its members ("<set>-<ordinal>"). ownerReferences are written by whoever
// creates the pod, so a pod that is no member keeps Whereabouts' behaviour.
std::optional<core::StatefulSetRef> stickyOwner(const PodFacts& pod, const PodCall& call) {
    if (!pod.statefulSet || !core::podOrdinal(pod.statefulSet->name, call.podName))
        return std::nullopt;
    return pod.statefulSet;
}

// The claim's name in the pod's selection element for this interface (cni::claimReference);
// "" when it names none.
Result<std::string> claimRefIn(const PodFacts& pod, const PodCall& call) {
    auto element = cni::selectionFor(pod.networks, call.ifName);
    if (!element)
        return makeError(Errc::InvalidConfig, "pod " + call.podNamespace + "/" + call.podName +
                                                  ": " + element.error().message);
    if (!*element) return std::string();
    const std::string& ref = cni::claimReference(**element);
    if (ref.empty()) return std::string();
    return core::claimName(ref, std::string(cni::kNetworksAnnotation) +
                                    ((*element)->cniArgsClaimRef.empty() ? "" : " cni-args") +
                                    " ipam-claim-reference");
}

// status.ips as allot writes them: each range's address with the range's prefix.
std::vector<std::string> statusIps(const std::vector<IpResult>& ips, size_t ranges) {
    std::vector<std::string> out;
    for (size_t i = 0; i < ips.size() && i < ranges; ++i)
        out.push_back(ips[i].ip.str() + "/" + std::to_string(ips[i].prefix));
    return out;
}

core::ClaimStatus allocatedStatus(std::vector<std::string> ips, const PodCall& call) {
    return {std::move(ips), call.podName, true, std::string(core::kReasonAllocated),
            "allocated by allot"};
}

// An empty claim's status is written alongside the last range's reservation (the address is
// the claim's from its pool entry on), not after it: a status write costs a round trip, and
// this is the ADD's only one on top of an ordinary ADD. What that leaves to mend afterwards:
// the ADD failed (the status read is put back) or the reservation moved the address (written
// again, in order, from what was written).
class EarlyStatus {
  public:
    EarlyStatus(Context& ctx, IpamClaimApi& api, const PodCall& call, std::string name,
                size_t ranges)
        : ctx_(ctx), api_(api), call_(call), name_(std::move(name)), ranges_(ranges) {}
    EarlyStatus(const EarlyStatus&) = delete;
    EarlyStatus& operator=(const EarlyStatus&) = delete;

    // For the engine's ADD: starts the status write alongside the last range's reservation.
    BeforeReserve hook() {
        return [this](const Addresses& ips) {
            if (started_ || ips.size() != ranges_) return;
            auto st = allocatedStatus(statusIps(ips, ranges_), call_);
            started_ = api_.startStatus(call_.podNamespace, name_, st);
            if (started_) ips_ = st.ips;
        };
    }

    // Waits for the write. True when the status now holds exactly `want`.
    bool wrote(const std::vector<std::string>& want) {
        if (!started_) return false;
        started_ = false;
        written_ = static_cast<bool>(api_.awaitStatus());
        return written_ && ips_ == want;
    }
    // The ADD failed: the status this call wrote (or may have: an answer lost) is put back as
    // it was read, with a moment past the deadline the ADD may have failed at.
    void undo() {
        if (!started_) return;
        (void)wrote({});
        CleanupGrace grace(ctx_);
        if (auto r = api_.restoreStatus(call_.podNamespace, name_, ips_); !r)
            ctx_.report.warnings.insert(
                "IPAMClaim " + call_.podNamespace + "/" + name_ +
                ": the status written before the ADD failed is left: " + r.error().message);
    }

  private:
    Context& ctx_;
    IpamClaimApi& api_;
    const PodCall& call_;
    std::string name_;
    size_t ranges_;
    bool started_ = false, written_ = false;  // written_: the write's answer was a success
    std::vector<std::string> ips_;
};

// The addresses the claim's status names, as requested addresses; the pod's own request when
// the claim has none (then recorded in the claim).
std::vector<core::IpAddress> wanted(const core::ClaimPlan& plan,
                                    std::vector<core::IpAddress> requested) {
    if (plan.allocate) return requested;
    std::vector<core::IpAddress> out;
    for (const auto& ip : plan.perRange)
        if (ip) out.push_back(*ip);
    return out;
}

// ADD for the claim `name` in the pod's namespace.
Result<Addresses> addForClaim(Context& ctx, const core::ValidatedConfig& cfg, const NetConf& net,
                              core::Owner owner, std::vector<core::IpAddress> requested,
                              IpamClaimApi& api, const PodCall& call, const std::string& name) {
    const std::string ref = call.podNamespace + "/" + name;
    auto claim = api.claim(call.podNamespace, name);
    if (!claim) {
        if (claim.code() == Errc::NotFound)
            return makeError(Errc::Transient,
                             "IPAMClaim " + ref + " not found (the pod references it in " +
                                 (net.claimRef.empty() ? std::string(cni::kNetworksAnnotation)
                                                       : std::string("args.cni")) +
                                 "; try again once it exists)");
        return makeError(claim.code(), "IPAMClaim " + ref + ": " + claim.error().message);
    }
    auto plan = core::planClaim(*claim, net.name, cfg.ranges);
    if (!plan) return plan.error();
    ctx.report.warnings.insert(plan->warnings.begin(), plan->warnings.end());
    owner.claim = ref;
    std::optional<EarlyStatus> early;
    if (plan->allocate) early.emplace(ctx, api, call, name, cfg.ranges.size());
    auto r = add(ctx, cfg, net.name, owner, wanted(*plan, std::move(requested)),
                 early ? early->hook() : BeforeReserve());
    if (!r) {
        if (early) early->undo();
        if (r.code() == Errc::Exhausted && plan->allocate) {
            core::ClaimStatus st{
                {}, call.podName, false, std::string(core::kReasonExhausted), r.error().message};
            if (auto w = api.setStatus(call.podNamespace, name, st); !w)
                ctx.report.warnings.insert("IPAMClaim " + ref +
                                           ": status not written: " + w.error().message);
        }
        return r;
    }
    const bool complete =
        !plan->allocate && std::all_of(plan->perRange.begin(), plan->perRange.end(),
                                       [](const auto& ip) { return ip.has_value(); });
    if (complete) return r;
    auto st = allocatedStatus(statusIps(*r, cfg.ranges.size()), call);
    if (early && early->wrote(st.ips)) return r;
    if (auto w = api.setStatus(call.podNamespace, name, st); !w)
        return makeError(w.code() == Errc::Conflict ? Errc::Transient : w.code(),
                         "IPAMClaim " + ref +
                             ": status not written (the address stays the "
                             "claim's; try again): " +
                             w.error().message);
    return r;
}

}  // namespace

Result<std::string> claimOf(const NetConf& net, IpamClaimApi& api, const PodCall& call) {
    auto name = argsClaimName(net);
    if (name && name->empty() && !call.podName.empty()) {
        auto pod = readPod(api, call, "its IPAMClaim reference");
        if (!pod) return pod.error();
        name = claimRefIn(*pod, call);
    }
    if (!name || name->empty()) return name;
    return call.podNamespace + "/" + *name;
}

Result<Addresses> addOwned(Context& ctx, const core::ValidatedConfig& cfg, const NetConf& net,
                           core::Owner owner, std::vector<core::IpAddress> requested,
                           IpamClaimApi& api, const PodCall& call) {
    const bool claims = net.allowPersistentIps, sticky = cfg.raw.stickyStatefulSets;
    if (claims && !net.claimRef.empty()) {
        auto name = argsClaimName(net);
        if (!name) return name.error();
        return addForClaim(ctx, cfg, net, owner, std::move(requested), api, call, *name);
    }
    if ((!claims && !sticky) || call.podName.empty())
        return add(ctx, cfg, net.name, owner, requested);
    auto pod = readPod(api, call, claims ? "its IPAMClaim reference" : "its StatefulSet");
    if (!pod) return pod.error();
    if (claims) {
        auto name = claimRefIn(*pod, call);
        if (!name) return name.error();
        if (!name->empty())
            return addForClaim(ctx, cfg, net, owner, std::move(requested), api, call, *name);
    }
    if (auto set = sticky ? stickyOwner(*pod, call) : std::nullopt)
        owner.claim = core::stickyKey(*set);
    return add(ctx, cfg, net.name, owner, requested);
}

}  // namespace allot::engine
