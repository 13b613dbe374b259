#pragma once
// Kubernetes Events (core/v1) for reclamations and anomalies. Emitting never blocks the
// caller: EventRecorder queues (bounded) and posts from its own thread.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

#include "gc-sidecar/metrics.h"
#include "gc-sidecar/stop.h"
#include "json/json.h"
#include "k8s/client.h"

namespace allot::gc {

struct ObjectRef {
    std::string kind;        // "Pod", "IPPool", ...
    std::string apiVersion;  // "v1", "whereabouts.cni.cncf.io/v1alpha1"
    std::string ns, name, uid;  // ns empty: cluster-scoped
};

struct EventSpec {
    bool warning = false;
    std::string reason;   // AddressReleased, ReleaseFailed, PoolAnomaly, MalformedNetworkStatus
    std::string message;  // names the IP and the network
    ObjectRef object;
};

// Where an Event about `o` is stored: its namespace; "default" for a cluster-scoped object
// (a Node), as the kubelet does.
std::string eventNamespace(const ObjectRef& o);

ObjectRef podRef(const std::string& ns, const std::string& name, const std::string& uid);
ObjectRef poolRef(const std::string& ns, const std::string& name);

class EventSink {
  public:
    virtual ~EventSink() = default;
    virtual void emit(EventSpec e) = 0;
};

// The Event object for `e` (metadata.generateName from the object's name).
json::Value eventObject(const EventSpec& e, const std::string& node, const std::string& identity,
                        std::chrono::system_clock::time_point now);

class EventRecorder : public EventSink {
  public:
    static constexpr size_t kMaxQueued = 2000;

    EventRecorder(k8s::Client client, std::string node, std::string identity, Metrics& metrics,
                  StopSignal& stop);
    void emit(EventSpec e) override;
    // Posts queued Events until stopped.
    void run();

  private:
    k8s::Client client_;
    std::string node_, identity_;
    Metrics& metrics_;
    StopSignal& stop_;
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<EventSpec> queue_;
    bool stopping_ = false;
};

}  // namespace allot::gc
