// K8sCluster's node reports (core::NodeReport): one Lease per node, allot-node-<node>, in the
// Lease namespace. spec.holderIdentity is the node and spec.renewTime when it probed; the
// annotations say whether the probe saw every namespace and which addresses it found held,
// and which build of allot-gc wrote them.
#include <sstream>

#include "cluster/k8s_cluster.h"
#include "k8s_api/resources.h"
#include "k8s_api/timestamp.h"

namespace allot::cluster {

using core::Errc;
using core::makeError;

namespace {

constexpr const char* kReportLabel = "allot.cni.dev/node-report";
constexpr const char* kHeldAnnotation = "allot.cni.dev/held";
constexpr const char* kProbeAnnotation = "allot.cni.dev/probe";
constexpr const char* kVersionAnnotation = "allot.cni.dev/version";
constexpr const char* kRevisionAnnotation = "allot.cni.dev/revision";
constexpr const char* kNodeUidAnnotation = "allot.cni.dev/node-uid";
// Past this many held addresses a report says "incomplete": it proves nothing, and the object
// stays far under the API server's 256 KiB for annotations.
constexpr size_t kMaxReported = 4000;

// A Lease name (a DNS subdomain, at most 253 characters) for any node name.
std::string leaseName(const std::string& node) {
    std::string name = "allot-node-" + node;
    if (name.size() <= 253) return name;
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : node) h = (h ^ c) * 1099511628211ULL;
    std::ostringstream hex;
    hex << std::hex << h;
    return name.substr(0, 230) + "-" + hex.str();
}

core::NodeReport reportOf(const json::Value& lease) {
    core::NodeReport r;
    r.node = json::stringAt(lease, {"spec", "holderIdentity"});
    if (auto t = k8s::parseTime(json::stringAt(lease, {"spec", "renewTime"}))) r.at = *t;
    r.complete = json::stringAt(lease, {"metadata", "annotations", kProbeAnnotation}) == "complete";
    r.version = json::stringAt(lease, {"metadata", "annotations", kVersionAnnotation});
    r.revision = json::stringAt(lease, {"metadata", "annotations", kRevisionAnnotation});
    r.nodeUid = json::stringAt(lease, {"metadata", "annotations", kNodeUidAnnotation});
    std::istringstream held(json::stringAt(lease, {"metadata", "annotations", kHeldAnnotation}));
    for (std::string ip; std::getline(held, ip, ',');) {
        auto parsed = core::IpAddress::parse(ip);
        if (!parsed)
            r.complete = false;  // unreadable: it proves nothing
        else
            r.held.insert(*parsed);
    }
    return r;
}

json::Value leaseOf(const std::string& ns, const core::NodeReport& r) {
    using json::Value;
    const bool complete = r.complete && r.held.size() <= kMaxReported;
    std::string held;
    if (complete)
        for (const auto& ip : r.held) held += (held.empty() ? "" : ",") + ip.str();
    Value labels = Value::object();
    labels.set(kReportLabel, Value::string("true"));
    Value annotations = Value::object();
    annotations.set(kProbeAnnotation, Value::string(complete ? "complete" : "incomplete"));
    annotations.set(kHeldAnnotation, Value::string(held));
    annotations.set(kVersionAnnotation, Value::string(r.version));
    annotations.set(kRevisionAnnotation, Value::string(r.revision));
    if (!r.nodeUid.empty()) annotations.set(kNodeUidAnnotation, Value::string(r.nodeUid));
    Value md = Value::object();
    md.set("name", Value::string(leaseName(r.node)));
    md.set("namespace", Value::string(ns));
    md.set("labels", std::move(labels));
    md.set("annotations", std::move(annotations));
    Value spec = Value::object();
    spec.set("holderIdentity", Value::string(r.node));
    spec.set("renewTime", Value::string(k8s::formatMicroTime(r.at)));
    Value lease = Value::object();
    lease.set("apiVersion", Value::string("coordination.k8s.io/v1"));
    lease.set("kind", Value::string("Lease"));
    lease.set("metadata", std::move(md));
    lease.set("spec", std::move(spec));
    return lease;
}

}  // namespace

Result<std::vector<core::NodeReport>> K8sCluster::nodeReports(const std::string& ns) {
    std::vector<core::NodeReport> out;
    k8s::ListOptions o;
    o.labelSelector = std::string(kReportLabel) + "=true";
    o.limit = 500;
    auto rv =
        seen_(client_.listEach(k8s::collectionPath(k8s::kLease, ns), o, [&](json::Value& item) {
            auto r = reportOf(item);
            // A report counts only under its own node's name: one Lease cannot speak for another
            // node.
            if (!r.node.empty() && json::stringAt(item, {"metadata", "name"}) == leaseName(r.node))
                out.push_back(std::move(r));
            return true;
        }));
    if (!rv) return rv.error();
    return out;
}

Result<void> K8sCluster::putNodeReport(const std::string& ns, const core::NodeReport& r) {
    if (r.node.empty()) return makeError(Errc::InvalidConfig, "a node report names no node");
    auto put = seen_(client_.patch(k8s::objectPath(k8s::kLease, ns, leaseName(r.node)),
                                   leaseOf(ns, r), k8s::PatchType::Apply, "allot-gc", true));
    if (!put) return put.error();
    return {};
}

}  // namespace allot::cluster
