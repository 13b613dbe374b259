#include "gc-sidecar/rules/match.h"

namespace allot::gc {

using cluster::PodInfo;

std::pair<std::string, std::string> splitPodRef(const std::string& ref) {
    auto slash = ref.find('/');
    if (slash == std::string::npos) return {"", ref};
    return {ref.substr(0, slash), ref.substr(slash + 1)};
}

MatchKind matchGone(const core::Owner& e, const GonePod& pod, const std::string& node, bool scan) {
    if (!e.podUid.empty())
        return !pod.uid.empty() && core::ownedByPod(e, pod) ? MatchKind::Uid : MatchKind::None;
    if (!core::ownedByPod(e, pod)) return MatchKind::None;
    if (!e.node.empty() && e.node != node) return MatchKind::None;
    if (scan && e.node.empty()) return MatchKind::None;
    return MatchKind::PodRef;
}

Liveness livenessOf(const std::optional<PodInfo>& now, const GonePod& pod) {
    if (!now) return Liveness::Gone;
    if (!pod.uid.empty() && (now->uid == pod.uid || now->mirrorOf == pod.uid))
        return Liveness::SameUid;
    return Liveness::OtherUid;
}

const char* leakReasonName(LeakReason r) {
    return core::name(r).data();
}

LeakReason classifyLeak(const core::Owner& e, const PodInfo* pod) {
    if (!pod) return core::classifyLeak(e, nullptr);
    const core::PodState state = cluster::podState(*pod);
    return core::classifyLeak(e, &state);
}

}  // namespace allot::gc
