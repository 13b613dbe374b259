#pragma once
// The NodeSlicePool store: where node slices (node_slice_size) live. allot-gc's slice controller
// writes them; the plugin (PoolStore::nodeSlice), the repair scan and kubectl allot read them.
// Implementations: MemoryStore (tests) and K8sNodeSliceStore (NodeSlicePool objects,
// whereabouts.cni.cncf.io/v1alpha1, through store/node_slice_codec). Both pass the NodeSlicePool
// cases of the store conformance suite (test/unit/store/store_conformance.h).
//
// Unlike a PoolStore, a NodeSliceStore is not bound to one namespace: the slice controller
// reconciles every namespace's NodeSlicePools in one pass, so each call names its namespace
// (NodeSlicePool::ns). Writes replace the whole object: what the codec does not name (`raw`) is
// written back as it was read.

#include <string>
#include <vector>

#include "core/result.h"
#include "store/node_slice_codec.h"
#include "store/pool_store.h"

namespace allot::store {

class NodeSliceStore {
  public:
    virtual ~NodeSliceStore() = default;

    // The NodeSlicePools of namespace `ns`, or of every namespace when `ns` is empty. NotFound
    // when the NodeSlicePool resource is not served (its CRD not installed): a reader that can
    // do without node slices takes that for none.
    virtual Result<std::vector<NodeSlicePool>> listNodeSlicePools(const std::string& ns) = 0;

    // NodeSlicePool `name` of namespace `ns`. NotFound when absent.
    virtual Result<NodeSlicePool> getNodeSlicePool(const std::string& ns,
                                                   const std::string& name) = 0;

    // Stores a new NodeSlicePool in p.ns (p.resourceVersion is ignored) and returns it as
    // stored, with its resourceVersion. AlreadyExists when that namespace has one of that name;
    // the stored one is left as it is.
    virtual Result<NodeSlicePool> createNodeSlicePool(const NodeSlicePool& p) = 0;

    // Replaces the stored object (spec, status, labels, annotations, owner references) if and
    // only if its resourceVersion equals p.resourceVersion. Conflict when it does not (someone
    // else wrote first: read again); NotFound when it is gone. Either way nothing is written.
    // Returns the object as stored, with its new resourceVersion. Internal when
    // p.resourceVersion is empty: an unguarded write is never sent.
    virtual Result<NodeSlicePool> updateNodeSlicePool(const NodeSlicePool& p) = 0;

    // Deletes NodeSlicePool `name` of `ns` if its resourceVersion is still `resourceVersion`.
    // Conflict when it is not (the object stays); NotFound when it is gone. Internal when
    // `resourceVersion` is empty: an unguarded delete is never sent.
    virtual Result<void> removeNodeSlicePool(const std::string& ns, const std::string& name,
                                             const std::string& resourceVersion) = 0;
};

// What PoolStore::nodeSlice answers from `read`, a read of a NodeSlicePool: the slice it gives
// `node` (the first), with the object's resourceVersion and its node_slice_parts refusal.
// `read`'s error when it failed; NotFound, naming the node, when it gives `node` no slice.
Result<NodeSlice> nodeSliceIn(Result<NodeSlicePool> read, const std::string& node);

}  // namespace allot::store
