#pragma once
// Who may free an address: the one rule every release path asks (design, "Who may free an
// address"). An address is freed only when
// - the runtime's own DEL or GC for that container came (FreeProof::RuntimeDel);
// - the entry's node proves the sandbox gone (NodeProbe; sandboxGone below): its container
//   runtime says so (CRI PodSandboxStatus), or, where no runtime is asked, no network namespace
//   there holds the address; never while an ADD for it may still be running there;
// - the entry's Node object is gone: Kubernetes' own statement that its pods are gone
//   (NodeDeleted);
// - the entry's Node is tainted node.kubernetes.io/out-of-service and its pod is gone from the
//   API: the operator's (or a fencing controller's) word that the node is off, as Kubernetes
//   takes it for volumes (NodeOutOfService);
// - its IPAMClaim or sticky owner says so (ClaimRule: core/ownership.h, core/sticky.h);
// - an operator forces it (Operator: `kubectl allot release --force`, recorded as an Event).
// Nothing else: a NotReady node, or a pod object that is gone, is not proof, because the
// node's sandboxes may run on, and a pod object showing its containers terminated says nothing
// of its sandbox. The repair loop's leader frees on its own authority only what a deleted or
// out-of-service Node held; the rest it hands to the entry's node (its allot-gc sweeps its own
// entries and proves), and an entry that names no node waits for every Node that runs allot-gc
// to report the address absent (NodeReport).

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/anomaly.h"
#include "core/ip.h"

namespace allot::core {

enum class FreeProof { RuntimeDel, NodeProbe, NodeDeleted, NodeOutOfService, ClaimRule, Operator };
// The log and Event wording: "the runtime's DEL", "the node's probe", ...
std::string_view name(FreeProof proof);

// The node's own proof that a sandbox is gone, from three sources.
//
// What the node's container runtime says of the entry's sandbox (CRI PodSandboxStatus on the
// entry's container ID, which is the sandbox's ID).
enum class RuntimeAnswer {
    NotAsked,  // no runtime socket configured: the namespace probe decides alone
    NotFound,  // the runtime has no such sandbox
    NotReady,  // it exists, not running (stopped, or still being set up or torn down)
    Ready,     // it runs
    Unknown,   // unreachable, timed out, refused, or an answer allot cannot read
};
// The log, Event and metric wording: "not_asked", "not_found", "not_ready", "ready", "unknown".
std::string_view name(RuntimeAnswer answer);

// Whether a network namespace on the node holds the address (the namespace probe).
enum class NamespaceAnswer {
    Holds,
    Absent,   // a complete probe did not find it
    Unknown,  // the probe failed, could not see everything, or did not run
};

// Whether an ADD for the entry's container may still be running on the node: the plugin's
// answer comes before the main plugin configures the address, and a runtime may still be
// setting the sandbox up when its pod is force-deleted.
enum class AddInFlight { No, Yes, Unknown };

// What the node knows of ADDs for one entry.
struct AddEvidence {
    // The entry is one allot's plugin wrote (it records its node), and allot's plugin marks
    // every ADD on the node before it writes the pool: the absence of a mark means no ADD.
    bool marksKnown = false;
    // A mark of an ADD for the entry's container, and how old it is.
    bool marked = false;
    std::chrono::milliseconds markAge{0};
    // How long this node has known the entry as a candidate (its pod gone): where marks are
    // not known, the entry is held until this passes the bound.
    std::chrono::milliseconds knownFor{0};
};

// An ADD may still run while its mark (or, without marks, the entry's candidacy) is younger
// than `bound`: the longest a runtime's ADD may take (kubelet's runtime request timeout, with
// a margin).
AddInFlight addInFlight(const AddEvidence& e, std::chrono::milliseconds bound);

struct SandboxEvidence {
    RuntimeAnswer runtime = RuntimeAnswer::NotAsked;
    NamespaceAnswer netns = NamespaceAnswer::Unknown;
    AddInFlight add = AddInFlight::Unknown;
};

struct SandboxFinding {
    bool gone = false;
    std::string_view why;      // for logs and Events: why it is gone, or why it is kept
    bool addInFlight = false;  // kept only while its ADD may run: decide again past the bound
};

// The rule: an ADD that may be in flight keeps it; a Ready sandbox keeps it whatever the
// namespaces show (a VM binding or a DPDK interface holds an address on no kernel interface);
// a runtime that cannot be asked keeps it; NotFound frees it; NotReady, and no runtime at all,
// free it only once a complete probe finds no namespace holding the address.
SandboxFinding sandboxGone(const SandboxEvidence& e);

// Whose proof a repair pass's leak candidate waits for.
enum class Prover {
    Leader,     // its node is deleted, or out of service with its pod gone: the leader frees it
    EntryNode,  // `node`'s allot-gc: it sweeps its own entries and probes; the leader reports
    EveryNode,  // no node is known: every node running allot-gc must report it absent
};

struct Verdict {
    Prover prover = Prover::EntryNode;
    std::string node;  // the node a sandbox may hold it on (Leader, EntryNode)
    // Leader: NodeDeleted or NodeOutOfService.
    FreeProof proof = FreeProof::NodeDeleted;
};

// The taint by which an operator, or a fencing controller, says a node is off.
inline constexpr const char* kOutOfServiceTaint = "node.kubernetes.io/out-of-service";

// The node a candidate's sandbox ran on: the entry's recorded node, else (for the same pod,
// seen terminal or on a gone or NotReady node) the pod's node; else none is known. The leader
// proves it when that Node is gone, or out of service while the pod is gone from the API.
Verdict proverFor(const LeakCandidate& c, const PodState* pod, const NodeIndex& nodes);

// Whether the entry's pod, as the API shows it now, may still be using the address: it exists,
// is the entry's (not re-created under its name), is not terminal and its Node is not deleted.
// A pod on a NotReady Node may run on. An entry that names no pod, or that an IPAMClaim owns,
// is always taken as in use (classifyLeak says None).
bool podMayUse(const Owner& entry, const PodState* pod);

// What an operator's release (kubectl allot release) rests on. When the entry's pod cannot be
// using it (podMayUse), the proof the controller would take itself (proverFor: the Node is
// deleted, or out of service with the pod gone); else Operator when `forced`; else none: the
// release is refused. `pod` is read with its Node's state (nodeGone, nodeNotReady).
std::optional<FreeProof> operatorProof(const Owner& entry, const PodState* pod,
                                       const NodeIndex& nodes, bool forced);

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
    // The UID of the Node its allot-gc found under its name: the report's proof, after the
    // Node is gone, that the name was a Node (NodeIndex::reported). Empty: it found none.
    std::string nodeUid;
};

// True when every Node that runs allot-gc (NodeIndex::runsAgent: a Linux Node, neither gone
// nor out of service) reported, after `since`, a complete probe without `ip`. A Node without
// such a report (its allot-gc never started, stopped reporting, or its report is gone) blocks
// the release; `missing`, when given, gets the first such Node. False when no Node is listed.
bool everyNodeReportsAbsent(const IpAddress& ip, std::chrono::system_clock::time_point since,
                            const std::vector<NodeReport>& reports, const NodeIndex& nodes,
                            std::string* missing = nullptr);

}  // namespace allot::core
