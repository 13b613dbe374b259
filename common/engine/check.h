#pragma once
// CHECK and STATUS: reads only, never a write.

#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/config.h"
#include "engine/context.h"

namespace allot::engine {

// CHECK: every range holds an allocation for (containerId, ifName) (or, for an owner with a
// claim, the claim's shared entry), `listed` (the prevResult's addresses) holds it, and with
// overlapping ranges its reservation is the owner's. NotFound names what is missing. Returns
// each range's address.
core::Result<std::vector<IpResult>> check(Context& ctx, const core::ValidatedConfig& cfg,
                                          const std::string& netName, const core::Owner& owner,
                                          const std::vector<IpResult>& listed);

// STATUS: the store answers and no range is exhausted (Exhausted / Transient otherwise).
core::Result<void> status(Context& ctx, const core::ValidatedConfig& cfg);

}  // namespace allot::engine
