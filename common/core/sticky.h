#pragma once
// Sticky StatefulSet addresses (issue 18): on a network with `sticky_statefulsets: true`, the
// entry of a pod that a StatefulSet controls is owned by that StatefulSet, not by the pod. It
// is recorded like an IPAMClaim owner (Owner::claim, allot's optional `ipamclaim` field) as
// "statefulset:<namespace>/<name>/<uid>", so no pod-scoped release frees it
// (core/ownership.h); the pod re-created under the same name takes it over (mayTakeOver).
// allot-gc frees it only on a confirmed read of the StatefulSet (decideSticky).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace allot::core {

inline constexpr std::string_view kStickyPrefix = "statefulset:";

struct StatefulSetRef {
    std::string ns, name, uid;
    friend bool operator==(const StatefulSetRef&, const StatefulSetRef&) = default;
};

// The owner key recorded on the entry.
std::string stickyKey(const StatefulSetRef& set);
// The StatefulSet a key names; nullopt for anything else (an IPAMClaim's "namespace/name").
std::optional<StatefulSetRef> parseStickyKey(std::string_view claim);
bool isStickyKey(std::string_view claim);

// The parts of a StatefulSet the decision reads.
struct StatefulSetView {
    std::string uid;
    bool deleting = false;      // metadata.deletionTimestamp set
    int64_t replicas = 1;       // spec.replicas (default 1)
    int64_t ordinalsStart = 0;  // spec.ordinals.start (default 0)
};

struct StickyDecision {
    bool release = false;
    std::string why;  // for the log line and the Event, when released
};

// Whether the address of pod `podName` (the entry's podRef name), owned by `owner`, is
// released, given a confirmed read of the StatefulSet (nullopt: the API answered NotFound).
// Released when the set is gone, being deleted, re-created (another UID), or the pod's
// ordinal lies outside [ordinals.start, ordinals.start + replicas) (a scale-down). A pod name
// that is not "<set>-<ordinal>" is kept while the set lives. A failed read is the caller's:
// it decides nothing.
StickyDecision decideSticky(const StatefulSetRef& owner, std::string_view podName,
                            const std::optional<StatefulSetView>& set);

// The ordinal of a StatefulSet pod name ("<set>-<n>", n in decimal without leading zeros);
// nullopt when `podName` is not one of `set`'s.
std::optional<int64_t> podOrdinal(std::string_view set, std::string_view podName);

}  // namespace allot::core
