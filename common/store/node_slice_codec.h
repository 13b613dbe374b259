#pragma once
// NodeSlicePool (whereabouts.cni.cncf.io/v1alpha1) objects: the one decoder and encoder. The
// spec and status are Whereabouts'; allot's slice controller adds its label and the
// node_slice_parts refusal annotation. Fields not named here are kept in `raw` and written back
// unchanged.

#include <optional>
#include <string>
#include <vector>

#include "core/node_slices.h"
#include "json/json.h"

namespace allot::store {

// On a NodeSlicePool (written by allot-gc's slice controller): node_slice_parts > 1 is not
// honoured on its network, and why (core::refuseSliceParts, naming the NADs). Absent: honoured.
inline constexpr const char* kPartsRefusedAnnotation = "allot.cni.cncf.io/node-slice-parts-refused";
// The label on the NodeSlicePools allot-gc's slice controller manages (and so seals the slice
// pools of before a slice leaves its node).
inline constexpr const char* kSliceManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kSliceManager = "allot-gc";

struct OwnerRef {
    std::string apiVersion, kind, name, uid;
    bool controller = false, blockOwnerDeletion = false;
    friend bool operator==(const OwnerRef&, const OwnerRef&) = default;
};

struct NodeSlicePool {
    std::string ns, name;
    std::string resourceVersion;  // empty: not stored yet
    std::string range, sliceSize;
    std::vector<core::SliceAllocation> allocations;
    std::vector<OwnerRef> owners;
    bool managed = false;  // labelled as allot-gc's slice controller's
    // kPartsRefusedAnnotation: node_slice_parts refused on the network, and why ("refused" when
    // the annotation is there but not a string).
    std::string partsRefused;
    json::Value raw;  // as read: fields not named above are written back unchanged
};

// Never fails: a field that is missing or not of its type reads as empty.
NodeSlicePool decodeNodeSlicePool(json::Value item);
// What was read (`raw`), with the fields above set.
json::Value encodeNodeSlicePool(const NodeSlicePool& p);

// The first slice `p` assigns `node`; nullopt: none.
std::optional<std::string> nodeSliceOf(const NodeSlicePool& p, const std::string& node);

}  // namespace allot::store
