#include "gc-sidecar/daemon/schema_probe.h"

#include <map>

#include "k8s_api/resources.h"
#include "log/log.h"
#include "store/pool_codec.h"

namespace allot::gc {

using cluster::ObjectRef;

using cluster::EventSpec;

const std::vector<std::string>& optionalEntryFields() {
    static const std::vector<std::string> fields{"node", "poduid", "network", "ipamclaim"};
    return fields;
}

json::Value probePool(const std::string& ns) {
    json::Value entry = json::Value::object();
    entry.set("id", json::Value::string("allot-schema-probe"));
    entry.set("podref", json::Value::string(ns + "/allot-schema-probe"));
    entry.set("ifname", json::Value::string("net1"));
    for (const auto& f : optionalEntryFields()) entry.set(f, json::Value::string("probe-" + f));
    json::Value allocations = json::Value::object();
    allocations.set("1", std::move(entry));
    json::Value spec = json::Value::object();
    spec.set("range", json::Value::string("192.0.2.0/30"));
    spec.set("allocations", std::move(allocations));
    json::Value meta = json::Value::object();
    meta.set("name", json::Value::string("allot-schema-probe"));
    meta.set("namespace", json::Value::string(ns));
    json::Value obj = json::Value::object();
    obj.set("apiVersion", json::Value::string(store::kGroupVersion));
    obj.set("kind", json::Value::string("IPPool"));
    obj.set("metadata", std::move(meta));
    obj.set("spec", std::move(spec));
    return obj;
}

core::Result<std::vector<std::string>> droppedFields(const json::Value& stored) {
    const json::Value* spec = stored.isObject() ? stored.find("spec") : nullptr;
    const json::Value* allocs = spec && spec->isObject() ? spec->find("allocations") : nullptr;
    const json::Value* entry = allocs && allocs->isObject() ? allocs->find("1") : nullptr;
    if (!entry || !entry->isObject())
        return core::makeError(core::Errc::Invalid,
                               "the API server's answer to the IPPool schema probe has no entry");
    std::vector<std::string> dropped;
    for (const auto& f : optionalEntryFields())
        if (!entry->find(f)) dropped.push_back(f);
    return dropped;
}

std::string prunedMessage(const std::vector<std::string>& dropped) {
    std::string names;
    for (const auto& f : dropped) names += (names.empty() ? "" : ", ") + f;
    return "the IPPool CRD's schema drops allot's entry fields " + names +
           " (Whereabouts' own CRD is installed, not deploy/crds/): no address is freed early, "
           "but an address whose pod is gone waits for every node's allot-gc to report it "
           "absent, or for its Node's deletion, and a pod re-created under its name gets "
           "another address; IPAMClaim owners are kept in the pool's annotation";
}

core::Result<std::vector<std::string>> probeIPPoolSchema(k8s::Client& client,
                                                         const std::string& ns) {
    auto answer =
        client.create(k8s::collectionPath(k8s::kIPPool, ns) + "?dryRun=All", probePool(ns));
    if (!answer) return answer.error();
    return droppedFields(*answer);
}

void reportIPPoolSchema(k8s::Client& client, const std::string& ns, const std::string& node,
                        Metrics& metrics, EventSink& events) {
    auto dropped = probeIPPoolSchema(client, ns);
    if (!dropped) {
        logging::logWarn("IPPool schema probe in namespace " + ns +
                         " failed: " + dropped.error().message);
        return;
    }
    std::map<std::string, uint64_t> gauge;
    for (const auto& f : optionalEntryFields()) gauge[f] = 0;
    for (const auto& f : *dropped) gauge[f] = 1;
    metrics.setPrunedFields(std::move(gauge));
    if (dropped->empty()) {
        logging::logInfo("the IPPool schema keeps allot's entry fields");
        return;
    }
    const std::string msg = prunedMessage(*dropped);
    logging::logWarn("warning: " + msg);
    events.emit(EventSpec{true, "IPPoolFieldsPruned", msg, ObjectRef{"Node", "v1", "", node, ""}});
}

}  // namespace allot::gc
