#include "gc-sidecar/match.h"

namespace allot::gc {

MatchKind matchGone(const core::Owner& e, const GonePod& pod, const std::string& node, bool scan) {
    if (!e.podUid.empty())
        return !pod.uid.empty() && e.podUid == pod.uid ? MatchKind::Uid : MatchKind::None;
    if (e.podRef.empty() || e.podRef != pod.ref()) return MatchKind::None;
    if (!e.node.empty() && e.node != node) return MatchKind::None;
    if (scan && e.node.empty()) return MatchKind::None;
    return MatchKind::PodRef;
}

Liveness livenessOf(const std::optional<PodInfo>& now, const GonePod& pod) {
    if (!now) return Liveness::Gone;
    if (!pod.uid.empty() && now->uid == pod.uid) return Liveness::SameUid;
    return Liveness::OtherUid;
}

const char* leakReasonName(LeakReason r) {
    switch (r) {
        case LeakReason::None:
            return "none";
        case LeakReason::NoPod:
            return "no_pod";
        case LeakReason::OtherUid:
            return "other_uid";
        case LeakReason::Terminal:
            return "terminal";
    }
    return "none";
}

LeakReason classifyLeak(const core::Owner& e, const PodInfo* pod) {
    if (e.podRef.empty()) return LeakReason::None;
    if (!pod) return LeakReason::NoPod;
    if (!e.podUid.empty() && !pod->uid.empty() && pod->uid != e.podUid) return LeakReason::OtherUid;
    if (pod->terminal()) return LeakReason::Terminal;
    return LeakReason::None;
}

}  // namespace allot::gc
