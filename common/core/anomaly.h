#pragma once
// The analysis step of allot-gc's repair pass: given what a pass read (reservations, pools a
// page at a time, then the pods those pools name), which allocations look leaked and what
// is inconsistent between pools and reservations. Pure: the caller reads, decides (grace,
// confirmations) and writes; nothing here knows the API server.
//
// Anomalies, each with a key that stays the same while the anomaly lasts (so a later step
// can report it once and count its passes):
// - duplicate_ip: one IP held in two overlapping pools;
// - out_of_range: an offset outside the pool's range;
// - undecodable_pool / undecodable_entry: another writer's data allot cannot read;
// - allocation_without_reservation: in a pool whose other allocations have reservations,
//   and only for an entry that is not itself a leak candidate;
// - reservation_without_allocation: matched by no entry, neither by name nor by owner;
// - slice_node_gone: a node's slice pool (node_slice_size) holds addresses and its Node is gone;
// - outside_node_slice: an address in a node's slice pool outside every slice its
//   NodeSlicePool assigns that node now, or held by a live pod running on another node.
// - pool_object_full: the IPPool object cannot take another entry even in Whereabouts' form
//   (store::cannotGrow): ADDs into it fail with code 11 until addresses are freed.
// Neither slice anomaly frees anything: the addresses of gone pods are released as leaks, by
// the same rules as any pool's.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/allocator.h"
#include "core/node_slices.h"

namespace allot::core {

enum class AnomalyKind {
    DuplicateIp,
    OutOfRange,
    ReservationWithoutAllocation,
    AllocationWithoutReservation,
    UndecodablePool,
    UndecodableEntry,
    SliceNodeGone,
    OutsideNodeSlice,
    PoolObjectFull,
};
// The metric label and Event prefix: "duplicate_ip", "out_of_range", ...
std::string_view name(AnomalyKind kind);
inline constexpr AnomalyKind kAnomalyKinds[] = {
    AnomalyKind::DuplicateIp,
    AnomalyKind::OutOfRange,
    AnomalyKind::ReservationWithoutAllocation,
    AnomalyKind::AllocationWithoutReservation,
    AnomalyKind::UndecodablePool,
    AnomalyKind::UndecodableEntry,
    AnomalyKind::SliceNodeGone,
    AnomalyKind::OutsideNodeSlice,
    AnomalyKind::PoolObjectFull,
};

struct Anomaly {
    AnomalyKind kind{};
    std::string key;          // the same on every pass while the anomaly lasts
    std::string pool;         // the IPPool it is about; empty: a reservation
    std::string message;      // for logs and Events, without the kind
    std::string reservation;  // the reservation it is about, when pool is empty
};

// Why an allocation looks leaked. Only a look: who may free it is core/release_rule.h's call
// (a pod on a NotReady node, or one whose object is gone, may still run on its node).
enum class LeakReason { None, NoPod, OtherUid, Terminal, NodeGone, NodeNotReady };
// Every reason an allocation may look leaked for (None is not one).
inline constexpr LeakReason kLeakReasons[] = {LeakReason::NoPod, LeakReason::OtherUid,
                                              LeakReason::Terminal, LeakReason::NodeGone,
                                              LeakReason::NodeNotReady};
// The metric label: "none", "no_pod", "other_uid", "terminal", "node_gone", "node_not_ready".
std::string_view name(LeakReason reason);
// Why, for logs and Events: "its pod no longer exists", ...
std::string_view describe(LeakReason reason);

// A pod as the analysis needs it (nullptr where it does not exist).
struct PodState {
    std::string uid;
    std::string mirrorOf;  // a mirror pod's config.mirror: its static pod's UID
    bool terminal = false;
    bool nodeGone = false;      // its Node object is gone (NodeIndex::gone)
    bool nodeNotReady = false;  // its Node is NotReady past the grace (NodeIndex::notReady)
    std::string nodeName;       // spec.nodeName; empty while unscheduled
};

// Is `entry` leaked, given the pod of its podref now (nullptr: no such pod)? An entry
// without a podref is never a leak candidate (nothing to check it against), nor is one an
// IPAMClaim owns: it outlives its pods, and goes only with its claim (core/ownership.h).
LeakReason classifyLeak(const Owner& entry, const PodState* pod);

// A Node as a pass listed it: Ready, or since when it is not.
struct NodeState {
    bool ready = false;
    std::chrono::system_clock::time_point notReadySince{};  // Ready condition's last transition
    bool outOfService = false;  // tainted node.kubernetes.io/out-of-service (any effect)
    bool linux = true;          // kubernetes.io/os is linux or unset: allot-gc runs there
};

// The Nodes one pass listed. A Node that is gone is Kubernetes' own statement that its pods
// are gone; one NotReady past the grace period is not (its kubelet may be stopped while its
// sandboxes run on): it is only reported. "Gone" is a name that is not a Node now but is known
// to have been one: a pass listed it before (`everListed`, kept by the caller), a NodeSlicePool
// assigns it a slice (`sliced`), or its allot-gc published a node report (`reported`; the
// report stays in the API after the Node goes, so this outlives any one leader). A name no Node
// ever had (a hostname fallback, a runtime without Node objects) proves nothing.
struct NodeIndex {
    std::unordered_map<std::string, NodeState> nodes;
    const std::set<std::string>* everListed = nullptr;
    std::chrono::system_clock::time_point listedAt;
    std::chrono::milliseconds grace{};
    std::set<std::string> sliced;
    std::set<std::string> reported;

    bool gone(const std::string& node) const;
    bool notReady(const std::string& node) const;      // listed, and NotReady past the grace
    bool outOfService(const std::string& node) const;  // listed, and tainted out-of-service
    // A listed Linux Node, not out of service: one whose allot-gc must report.
    bool runsAgent(const std::string& node) const;
};

struct ReservationEntry {
    std::string name, containerId, podRef, ifName, resourceVersion;
    std::chrono::system_clock::time_point created;
};

// An entry of a pool that allot cannot decode: its key, why, and the identities it names
// (its "id" and "podref" when they are strings).
struct UndecodedEntry {
    std::string key, reason;
    std::optional<std::string> containerId, podRef;
};

struct PoolEntries {
    std::string name;
    std::string range;  // spec.range
    const AllocationMap* allocations = nullptr;
    std::vector<UndecodedEntry> undecoded;
    // The network_name prefixes a reservation of `owner`'s address in this pool may carry
    // (never empty).
    std::function<std::vector<std::string>(const Owner&)> networkNames;
    // Why the pool object cannot take another entry (store::cannotGrow); empty: it can.
    std::string objectFull = {};
};

struct PoolUsage {
    uint64_t size = 0, used = 0;  // size saturates at 2^64-1
};

struct LeakCandidate {
    std::string pool;
    u128 offset = 0;
    Owner owner;
    LeakReason reason = LeakReason::None;
};

struct MissingReservation {
    std::string pool;
    IpAddress ip;
    Owner owner;
    std::string reservation;  // the name it should have
};

struct Findings {
    std::vector<Anomaly> anomalies;
    std::vector<LeakCandidate> candidates;
    std::vector<MissingReservation> missing;  // of live pods: to re-create
    std::vector<size_t> orphans;              // indexes into the reservations: held by nobody
};

// Keys a decide step tracks across passes (the last two equal their anomaly's key).
std::string candidateKey(const LeakCandidate& c);
std::string missingKey(const MissingReservation& m);
std::string orphanKey(const ReservationEntry& r);

// "pod ns/name eth0", or "container 0123456789abcdef" when no podref was recorded.
std::string whoHolds(const Owner& o);

// One pass's analysis, fed as the pass reads: reservations first, then pools (a page at a
// time: only compact indexes are kept), then the pods that podRefs() names.
class PassAnalysis {
  public:
    PassAnalysis(std::string poolNamespace, std::vector<ReservationEntry> reservations);

    // nullopt when the pool's range is invalid (reported as undecodable_pool).
    std::optional<PoolUsage> addPool(const PoolEntries& pool);
    void addUndecodablePool(const std::string& pool, const std::string& why);
    // Before the pools: the NodeSlicePools of the pool namespace, and the Nodes listed (kept
    // by the caller while this lives), to tell node slice pools and their nodes.
    void setNodeSlices(std::vector<NodeSliceView> nodeSlicePools, const NodeIndex* nodes);

    // The pods finish() needs ("ns/name").
    bool wantsPod(const std::string& podRef) const { return wanted_.count(podRef) != 0; }
    const std::unordered_set<std::string>& wantedPods() const { return wanted_; }

    // `pods`: by "ns/name", those of wanted that exist. Frees the per-entry indexes.
    Findings finish(const std::unordered_map<std::string, PodState>& pods);

    const std::vector<ReservationEntry>& reservations() const { return res_; }
    size_t allocations() const { return allocations_; }

  private:
    struct Holder {
        std::string pool;
        Owner owner;
    };
    // An entry with a podref, to hold against its pod in finish(): its pool and owner live in
    // holders_ (a map: the pointer stays valid), or in shadowed_ for the second holder of a
    // duplicate IP. Not a copy of the owner: one pass holds one of these per allocation.
    struct Entry {
        u128 offset = 0;
        const Holder* holder = nullptr;
        LeakReason reason = LeakReason::None;
    };
    struct Unreserved {
        MissingReservation missing;
        size_t entry;  // index in entries_, SIZE_MAX when it has no podref
    };
    // A live pod holding an address of node `node`'s slice pool, to check it runs there.
    struct SliceHeld {
        std::string pool, node, ip;
        Owner owner;
    };
    void addUndecodedEntries(const PoolEntries& pool);
    void checkSlicePool(const PoolEntries& p, const Cidr& cidr);
    void addOtherNodeHolders(const std::unordered_map<std::string, PodState>& pods,
                             Findings& out) const;
    // True when a reservation of `ip` is held by `o` (and marks it matched).
    bool matchReservation(const IpAddress& ip, const Owner& o,
                          const std::vector<std::string>& nets);
    bool heldByAnyAllocation(const ReservationEntry& r) const;
    void addOrphans(Findings& out) const;

    std::string ns_;
    std::vector<ReservationEntry> res_;
    std::vector<bool> matched_;
    std::unordered_map<std::string, size_t> resByName_;
    std::map<IpAddress, Holder> holders_;
    std::unordered_set<std::string> allocContainers_, allocPodRefs_, wanted_;
    std::vector<Entry> entries_;   // with a podref: to hold against their pods
    std::deque<Holder> shadowed_;  // holders of a duplicate IP after the first
    std::vector<Unreserved> unreserved_;
    std::vector<Anomaly> anomalies_;
    std::vector<NodeSliceView> nodeSlicePools_;
    const NodeIndex* nodes_ = nullptr;
    std::vector<SliceHeld> sliceHeld_;
    size_t allocations_ = 0;
};

}  // namespace allot::core
