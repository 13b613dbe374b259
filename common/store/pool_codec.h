#pragma once
// IPPool and OverlappingRangeIPReservation objects <-> store types, in Whereabouts' exact
// wire format plus allot's optional fields ("node", "poduid").

#include <string>

#include "json/json.h"
#include "store/pool_store.h"

namespace allot::store {

inline constexpr const char* kGroupVersion = "whereabouts.cni.cncf.io/v1alpha1";

// Decodes an IPPool object. Invalid (naming the field) for a wrong type, a non-decimal or
// overflowing offset key, or a missing range. Unknown fields are ignored.
Result<Pool> decodePool(const json::Value& obj);
// Encodes a full IPPool object (metadata.name/namespace/resourceVersion, spec).
json::Value encodePool(const Pool& pool, const std::string& ns);

Result<Reservation> decodeReservation(const json::Value& obj);
json::Value encodeReservation(const Reservation& r, const std::string& ns);

}  // namespace allot::store
