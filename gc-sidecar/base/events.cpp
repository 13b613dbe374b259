#include "gc-sidecar/base/events.h"

#include "k8s_api/resources.h"
#include "k8s_api/timestamp.h"
#include "log/log.h"

namespace allot::gc {

using cluster::eventNamespace;

using cluster::eventObject;

using cluster::EventSpec;

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
            metrics_.addApiError(core::errcName(r.code()));
            logging::logWarn("event " + e.reason + " for " + e.object.kind + " " + e.object.ns +
                             "/" + e.object.name + " not recorded: " + r.error().message);
        }
    }
}

}  // namespace allot::gc
