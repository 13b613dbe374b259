#include "gc-sidecar/base/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace allot::gc {

using cluster::Cluster;

void parallelFor(const std::vector<Cluster*>& clusters, size_t n,
                 const std::function<void(size_t, Cluster&)>& fn) {
    if (n == 0) return;
    const size_t workers = std::min(clusters.size(), n);
    std::atomic<size_t> next{0};
    auto body = [&](Cluster& c) {
        for (size_t i; (i = next.fetch_add(1)) < n;) fn(i, c);
    };
    std::vector<std::thread> threads;
    threads.reserve(workers - 1);
    for (size_t w = 1; w < workers; ++w) threads.emplace_back([&, w] { body(*clusters[w]); });
    body(*clusters[0]);
    for (auto& t : threads) t.join();
}

}  // namespace allot::gc
