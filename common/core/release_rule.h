#pragma once
// Who may free an address: the one rule every release path asks (design, "Who may free an
// address"). An address is freed only when
// - the runtime's own DEL or GC for that container came (FreeProof::RuntimeDel);
// - the entry's node proves the sandbox gone: its own allot-gc probed and no network namespace
//   there holds the address, or its pod's object shows the sandbox stopped (NodeProbe);
// - the entry's Node object is gone: Kubernetes' own statement that its pods are gone
//   (NodeDeleted);
// - its IPAMClaim or sticky owner says so (ClaimRule: core/ownership.h, core/sticky.h);
// - an operator forces it (Operator: `kubectl allot release --force`, recorded as an Event).
// Nothing else: a NotReady node, or a pod object that is gone, is not proof, because the
// node's sandboxes may run on. The repair loop's leader frees on its own authority only what a
// deleted Node held; the rest it hands to the entry's node (its allot-gc sweeps its own
// entries and probes), and an entry that names no node waits for every node that runs allot-gc
// to report the address absent (NodeReport).

#include <chrono>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/anomaly.h"
#include "core/ip.h"

namespace allot::core {

enum class FreeProof { RuntimeDel, NodeProbe, NodeDeleted, ClaimRule, Operator };
// The log and Event wording: "the runtime's DEL", "the node's probe", ...
std::string_view name(FreeProof proof);

// Whose proof a repair pass's leak candidate waits for.
enum class Prover {
    Leader,     // its node is deleted: the leader frees it (NodeDeleted)
    EntryNode,  // `node`'s allot-gc: it sweeps its own entries and probes; the leader reports
    EveryNode,  // no node is known: every node running allot-gc must report it absent
};

struct Verdict {
    Prover prover = Prover::EntryNode;
    std::string node;  // the node a sandbox may hold it on (Leader, EntryNode)
};

// The node a candidate's sandbox ran on: the entry's recorded node, else (for the same pod,
// seen terminal or on a gone or NotReady node) the pod's node; else none is known.
Verdict proverFor(const LeakCandidate& c, const PodState* pod, const NodeIndex& nodes);

// What one node's allot-gc last said about the addresses of entries that name no node: which
// of them a network namespace there holds. `complete` is false when its probe could not see
// every namespace: then it proves nothing.
struct NodeReport {
    std::string node;
    std::chrono::system_clock::time_point at{};
    bool complete = false;
    std::set<IpAddress> held;
    // The build of the allot-gc that wrote it (kubectl allot version); empty from one older
    // than these fields.
    std::string version, revision;
};

// True when every node that reports (and whose Node exists) reported, after `since`, a
// complete probe without `ip`. Nodes that never reported run no allot-gc and are not asked
// (the README says what that means); a node that stopped reporting blocks the release until it
// reports again or its Node is deleted. False when no node reports at all.
bool everyNodeReportsAbsent(const IpAddress& ip, std::chrono::system_clock::time_point since,
                            const std::vector<NodeReport>& reports, const NodeIndex& nodes);

}  // namespace allot::core
