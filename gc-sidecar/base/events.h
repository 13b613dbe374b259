#pragma once
// Kubernetes Events (core/v1) for reclamations and anomalies. Emitting never blocks the
// caller: EventRecorder queues (bounded) and posts from its own thread.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

#include "cluster/event.h"
#include "gc-sidecar/base/metrics.h"
#include "gc-sidecar/base/stop.h"
#include "json/json.h"
#include "k8s/client.h"

namespace allot::gc {

class EventSink {
  public:
    virtual ~EventSink() = default;
    virtual void emit(cluster::EventSpec e) = 0;
};

class EventRecorder : public EventSink {
  public:
    static constexpr size_t kMaxQueued = 2000;

    EventRecorder(k8s::Client client, std::string node, std::string identity, Metrics& metrics,
                  StopSignal& stop);
    void emit(cluster::EventSpec e) override;
    // Posts queued Events until stopped.
    void run();

  private:
    k8s::Client client_;
    std::string node_, identity_;
    Metrics& metrics_;
    StopSignal& stop_;
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<cluster::EventSpec> queue_;
    bool stopping_ = false;
};

}  // namespace allot::gc
