#include "core/release_rule.h"

#include <algorithm>
#include <unordered_map>

namespace allot::core {

std::string_view name(FreeProof proof) {
    switch (proof) {
        case FreeProof::RuntimeDel:
            return "the runtime's DEL";
        case FreeProof::NodeProbe:
            return "its node's probe";
        case FreeProof::NodeDeleted:
            return "its Node's deletion";
        case FreeProof::NodeOutOfService:
            return "its Node's node.kubernetes.io/out-of-service taint";
        case FreeProof::ClaimRule:
            return "its claim's rule";
        case FreeProof::Operator:
            return "an operator's forced release";
    }
    return "unknown";
}

std::string_view name(RuntimeAnswer answer) {
    switch (answer) {
        case RuntimeAnswer::NotAsked:
            return "not_asked";
        case RuntimeAnswer::NotFound:
            return "not_found";
        case RuntimeAnswer::NotReady:
            return "not_ready";
        case RuntimeAnswer::Ready:
            return "ready";
        case RuntimeAnswer::Unknown:
            return "unknown";
    }
    return "unknown";
}

AddInFlight addInFlight(const AddEvidence& e, std::chrono::milliseconds bound) {
    if (e.marked) return e.markAge < bound ? AddInFlight::Yes : AddInFlight::No;
    if (e.marksKnown) return AddInFlight::No;
    return e.knownFor < bound ? AddInFlight::Unknown : AddInFlight::No;
}

SandboxFinding sandboxGone(const SandboxEvidence& e) {
    if (e.add == AddInFlight::Yes)
        return {false, "an ADD for its container may still be running", true};
    if (e.add == AddInFlight::Unknown)
        return {false, "an ADD for its container may still be running (allot cannot tell yet)",
                true};
    switch (e.runtime) {
        case RuntimeAnswer::Ready:
            return {false, "the container runtime says its sandbox is ready"};
        case RuntimeAnswer::Unknown:
            return {false, "the container runtime could not be asked about its sandbox"};
        case RuntimeAnswer::NotFound:
            return {true, "the container runtime has no such sandbox"};
        case RuntimeAnswer::NotReady:
        case RuntimeAnswer::NotAsked:
            break;
    }
    const bool stopped = e.runtime == RuntimeAnswer::NotReady;
    switch (e.netns) {
        case NamespaceAnswer::Absent:
            return {true, stopped ? "its sandbox is stopped and no network namespace holds it"
                                  : "no network namespace on its node holds it"};
        case NamespaceAnswer::Holds:
            return {false, "a network namespace on its node still holds it"};
        case NamespaceAnswer::Unknown:
            break;
    }
    return {false, "its node's network namespaces could not all be read"};
}

Verdict proverFor(const LeakCandidate& c, const PodState* pod, const NodeIndex& nodes) {
    std::string node = c.owner.node;
    // The pod's node is the sandbox's only while the object is the same pod's: a pod re-created
    // under the name (OtherUid) may run anywhere, and says nothing of where the old one ran.
    if (node.empty() && pod && c.reason != LeakReason::OtherUid) node = pod->nodeName;
    if (node.empty()) return {Prover::EveryNode, "", FreeProof::NodeProbe};
    if (nodes.gone(node)) return {Prover::Leader, node, FreeProof::NodeDeleted};
    // The taint is the operator's word for the node's sandboxes; the pod's object going (the
    // pod garbage collector deletes them) is the sign that Kubernetes took it.
    const bool podGone = pod == nullptr || c.reason == LeakReason::OtherUid;
    if (nodes.outOfService(node) && podGone)
        return {Prover::Leader, node, FreeProof::NodeOutOfService};
    return {Prover::EntryNode, node, FreeProof::NodeProbe};
}

bool podMayUse(const Owner& entry, const PodState* pod) {
    const LeakReason r = classifyLeak(entry, pod);
    return r == LeakReason::None || r == LeakReason::NodeNotReady;
}

std::optional<FreeProof> operatorProof(const Owner& entry, const PodState* pod,
                                       const NodeIndex& nodes, bool forced) {
    if (!podMayUse(entry, pod)) {
        const Verdict v = proverFor({"", 0, entry, classifyLeak(entry, pod)}, pod, nodes);
        if (v.prover == Prover::Leader) return v.proof;
    }
    if (forced) return FreeProof::Operator;
    return std::nullopt;
}

bool everyNodeReportsAbsent(const IpAddress& ip, std::chrono::system_clock::time_point since,
                            const std::vector<NodeReport>& reports, const NodeIndex& nodes,
                            std::string* missing) {
    std::unordered_map<std::string, const NodeReport*> byNode;
    for (const auto& r : reports) byNode.emplace(r.node, &r);
    std::vector<std::string> names;
    for (const auto& [name, state] : nodes.nodes)
        if (nodes.runsAgent(name)) names.push_back(name);
    std::sort(names.begin(), names.end());  // the same Node named missing on every pass
    for (const auto& name : names) {
        auto r = byNode.find(name);
        const bool absent = r != byNode.end() && r->second->complete && r->second->at >= since &&
                            r->second->held.count(ip) == 0;
        if (absent) continue;
        if (missing) *missing = name;
        return false;
    }
    return !names.empty();
}

}  // namespace allot::core
