#include "gc-sidecar/events.h"

#include "k8s/timestamp.h"
#include "log/log.h"
#include "k8s/resources.h"

namespace allot::gc {

using k8s::formatTime;

namespace {
constexpr size_t kMaxMessage = 1024;
}

std::string eventNamespace(const ObjectRef& o) { return o.ns.empty() ? "default" : o.ns; }

ObjectRef podRef(const std::string& ns, const std::string& name, const std::string& uid) {
    return ObjectRef{"Pod", "v1", ns, name, uid};
}

ObjectRef poolRef(const std::string& ns, const std::string& name) {
    return ObjectRef{"IPPool", "whereabouts.cni.cncf.io/v1alpha1", ns, name, ""};
}

json::Value eventObject(const EventSpec& e, const std::string& node, const std::string& identity,
                        std::chrono::system_clock::time_point now) {
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
    src.set("component", Value::string("allot-gc"));
    src.set("host", Value::string(node));
    ev.set("source", std::move(src));
    const std::string t = formatTime(now);
    ev.set("firstTimestamp", Value::string(t));
    ev.set("lastTimestamp", Value::string(t));
    ev.set("count", Value::number(1));
    ev.set("reportingComponent", Value::string("allot-gc"));
    ev.set("reportingInstance", Value::string(identity));
    return ev;
}

EventRecorder::EventRecorder(k8s::Client client, std::string node, std::string identity,
                             Metrics& metrics, StopSignal& stop)
    : client_(std::move(client)),
      node_(std::move(node)),
      identity_(std::move(identity)),
      metrics_(metrics),
      stop_(stop) {}

void EventRecorder::emit(EventSpec e) {
    {
        std::lock_guard l(m_);
        if (queue_.size() >= kMaxQueued) {
            metrics_.addEventDropped();
            return;
        }
        queue_.push_back(std::move(e));
    }
    cv_.notify_one();
}

void EventRecorder::run() {
    stop_.onStop([this] {
        {
            std::lock_guard l(m_);
            stopping_ = true;
        }
        cv_.notify_all();
    });
    for (;;) {
        EventSpec e;
        {
            std::unique_lock l(m_);
            cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_) return;
            e = std::move(queue_.front());
            queue_.pop_front();
        }
        auto body = eventObject(e, node_, identity_, std::chrono::system_clock::now());
        auto r = client_.create(k8s::collectionPath(k8s::kEvent, eventNamespace(e.object)), body);
        if (!r) {
            metrics_.addEventDropped();
            metrics_.addApiError();
            logging::logWarn("event " + e.reason + " for " + e.object.kind + " " + e.object.ns + "/" +
                    e.object.name + " not recorded: " + r.error().message);
        }
    }
}

}  // namespace allot::gc
