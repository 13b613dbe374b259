#pragma once
// Releases by the runtime: DEL of one container's interface, GC of this node's entries the
// runtime no longer lists, and the journal entry of a DEL that could not reach the store.

#include <string>
#include <vector>

#include "cni/net_config.h"
#include "core/allocator.h"
#include "core/config.h"
#include "engine/context.h"

namespace allot::engine {

// DEL: releases (containerId, ifName) in every range. Nothing to release is success. Any
// other failure to finish (the store unreachable until the deadline, a 401/403, a pool allot
// cannot decode) journals the release and DEL succeeds (the returned bool says whether it was
// journaled, report.journalReason why): DEL never blocks pod teardown.
core::Result<bool> del(Context& ctx, const core::ValidatedConfig& cfg, const core::Owner& owner);

// Journals the release of `owner` without a store: the pools named from the config (all of
// the namespace's, for allot-gc to search, in node-slice mode), the reservations left for
// allot-gc to find through them.
core::Result<void> journalRelease(ReleaseJournal& journal, const core::ValidatedConfig& cfg,
                                  const core::Owner& owner, const std::string& poolNamespace);

// GC: releases allocations recorded for this node and this network (`netName`) whose
// (containerId, ifName) is not in `valid`. Entries without a recorded node or network (for
// example written by Whereabouts) are never touched. Returns how many were released.
core::Result<size_t> gc(Context& ctx, const core::ValidatedConfig& cfg, const std::string& netName,
                        const std::vector<cni::Attachment>& valid);

}  // namespace allot::engine
