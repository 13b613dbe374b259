#pragma once
// What allot-gc's unit tests share beside the in-memory Cluster (test/unit/cluster/fake_cluster.h):
// an EventSink that collects, and quiet logs.

#include <mutex>
#include <string>
#include <vector>

#include "gc-sidecar/base/events.h"
#include "log/log.h"

namespace allot::test {

// Collects Events instead of posting them.
class EventLog : public gc::EventSink {
  public:
    void emit(cluster::EventSpec e) override {
        std::lock_guard l(m_);
        events_.push_back(std::move(e));
    }
    std::vector<cluster::EventSpec> all() {
        std::lock_guard l(m_);
        return events_;
    }
    int count(const std::string& reason) {
        std::lock_guard l(m_);
        int n = 0;
        for (const auto& e : events_) n += e.reason == reason;
        return n;
    }

  private:
    std::mutex m_;
    std::vector<cluster::EventSpec> events_;
};

}  // namespace allot::test

namespace allot::test {
// The code under test logs every release; keep the test output to failures.
inline const int kQuietGcLogs = [] {
    logging::daemonLog().setLevel(logging::Level::Error);
    return 0;
}();
}  // namespace allot::test
