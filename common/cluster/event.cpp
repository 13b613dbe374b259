#include "cluster/event.h"

#include "k8s_api/timestamp.h"

namespace allot::cluster {

using k8s::formatTime;

namespace {
constexpr size_t kMaxMessage = 1024;
}

ObjectRef podRef(const std::string& ns, const std::string& name, const std::string& uid) {
    return ObjectRef{"Pod", "v1", ns, name, uid};
}

ObjectRef poolRef(const std::string& ns, const std::string& name) {
    return ObjectRef{"IPPool", "whereabouts.cni.cncf.io/v1alpha1", ns, name, ""};
}

std::string eventNamespace(const ObjectRef& o) {
    return o.ns.empty() ? "default" : o.ns;
}

json::Value eventObject(const EventSpec& e, const std::string& node, const std::string& identity,
                        std::chrono::system_clock::time_point now, const std::string& component) {
    using json::Value;
    Value ev = Value::object();
    ev.set("apiVersion", Value::string("v1"));
    ev.set("kind", Value::string("Event"));
    Value md = Value::object();
    // Object names are at most 253 characters; leave room for the generated suffix.
    md.set("generateName", Value::string(e.object.name.substr(0, 200) + "."));
    md.set("namespace", Value::string(eventNamespace(e.object)));
    ev.set("metadata", std::move(md));
    Value obj = Value::object();
    obj.set("kind", Value::string(e.object.kind));
    obj.set("apiVersion", Value::string(e.object.apiVersion));
    if (!e.object.ns.empty()) obj.set("namespace", Value::string(e.object.ns));
    obj.set("name", Value::string(e.object.name));
    if (!e.object.uid.empty()) obj.set("uid", Value::string(e.object.uid));
    ev.set("involvedObject", std::move(obj));
    ev.set("reason", Value::string(e.reason));
    ev.set("message", Value::string(e.message.substr(0, kMaxMessage)));
    ev.set("type", Value::string(e.warning ? "Warning" : "Normal"));
    Value src = Value::object();
    src.set("component", Value::string(component));
    src.set("host", Value::string(node));
    ev.set("source", std::move(src));
    const std::string t = formatTime(now);
    ev.set("firstTimestamp", Value::string(t));
    ev.set("lastTimestamp", Value::string(t));
    ev.set("count", Value::number(1));
    ev.set("reportingComponent", Value::string(component));
    ev.set("reportingInstance", Value::string(identity));
    return ev;
}

}  // namespace allot::cluster
