#pragma once
// Whether the cluster's IPPool schema keeps allot's optional entry fields (node, poduid,
// network, ipamclaim), asked once at start. Under Whereabouts' own CRDs the API server drops
// them: releases then fall back to what every entry keeps (container ID, pod name, interface),
// which is safe and slower (core/release_rule.h: an entry that names no node waits for every
// node's report), and allot-gc says so with a Warning Event on its Node and the metric
// allot_ippool_field_pruned.

#include <string>
#include <vector>

#include "core/result.h"
#include "gc-sidecar/base/events.h"
#include "gc-sidecar/base/metrics.h"
#include "json/json.h"
#include "k8s/client.h"

namespace allot::gc {

// The optional fields of the probe's entry, in the order the message names them.
const std::vector<std::string>& optionalEntryFields();

// The IPPool a dry run creates in `ns` (nothing is stored): one entry carrying every field.
json::Value probePool(const std::string& ns);

// Which of optionalEntryFields() the entry at offset 1 of `stored` (the API server's answer)
// lacks. Invalid when the answer holds no such entry.
core::Result<std::vector<std::string>> droppedFields(const json::Value& stored);

// The Event's message: what is dropped and what that changes.
std::string prunedMessage(const std::vector<std::string>& dropped);

// The dry-run create of probePool in `ns`; the fields its answer dropped.
core::Result<std::vector<std::string>> probeIPPoolSchema(k8s::Client& client,
                                                         const std::string& ns);

// probeIPPoolSchema, then the metric, a log line and, when something is dropped, a Warning
// Event (IPPoolFieldsPruned) on `node`. A failed probe is logged and changes nothing.
void reportIPPoolSchema(k8s::Client& client, const std::string& ns, const std::string& node,
                        Metrics& metrics, EventSink& events);

}  // namespace allot::gc
