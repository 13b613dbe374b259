#include "core/release_rule.h"

#include <algorithm>

namespace allot::core {

std::string_view name(FreeProof proof) {
    switch (proof) {
        case FreeProof::RuntimeDel:
            return "the runtime's DEL";
        case FreeProof::NodeProbe:
            return "its node's probe";
        case FreeProof::NodeDeleted:
            return "its Node's deletion";
        case FreeProof::ClaimRule:
            return "its claim's rule";
        case FreeProof::Operator:
            return "an operator's forced release";
    }
    return "unknown";
}

Verdict proverFor(const LeakCandidate& c, const PodState* pod, const NodeIndex& nodes) {
    std::string node = c.owner.node;
    // The pod's node is the sandbox's only while the object is the same pod's: a pod re-created
    // under the name (OtherUid) may run anywhere, and says nothing of where the old one ran.
    if (node.empty() && pod && c.reason != LeakReason::OtherUid) node = pod->nodeName;
    if (node.empty()) return {Prover::EveryNode, ""};
    if (nodes.gone(node)) return {Prover::Leader, node};
    return {Prover::EntryNode, node};
}

bool everyNodeReportsAbsent(const IpAddress& ip, std::chrono::system_clock::time_point since,
                            const std::vector<NodeReport>& reports, const NodeIndex& nodes) {
    size_t asked = 0;
    for (const auto& r : reports) {
        if (nodes.gone(r.node)) continue;  // its sandboxes went with it
        ++asked;
        if (!r.complete || r.at < since || r.held.count(ip) != 0) return false;
    }
    return asked != 0;
}

}  // namespace allot::core
