#pragma once
// The pool namespaces allot-gc scans (catch-up and the repair loop): `--namespace` and every
// namespace a NetworkAttachmentDefinition's IPAM `namespace` key names. One set per process,
// shared by the release worker and the repair loop: it learns a namespace when either reads a
// NAD that names it, and from a list of every NAD (`refresh`, before each catch-up and each
// repair pass). A namespace once named stays (its pools may hold entries after the NAD is
// gone); at most `kMaxPoolNamespaces`, since a NAD's author chooses them. Thread-safe.

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cluster/cluster.h"

namespace allot::gc {

inline constexpr size_t kMaxPoolNamespaces = 256;

class PoolNamespaces {
  public:
    PoolNamespaces(std::string defaultNamespace, std::vector<std::string> ipamTypes,
                   std::vector<std::string> flatFiles);

    // A NAD's IPAM section named `ns` (empty: the default namespace).
    void learn(const std::string& ns);
    // Lists every NAD and learns the pool namespaces of those whose IPAM type is allot's. A
    // NAD whose config cannot be read names nothing. Errors: the list's (what was learned
    // before stays); none when the NAD resource is not installed.
    core::Result<void> refresh(cluster::Cluster& c);
    // The default namespace and every one learned, in name order.
    std::set<std::string> all() const;
    const std::string& defaultNamespace() const { return default_; }

  private:
    const std::string default_;
    const std::vector<std::string> ipamTypes_, flatFiles_;
    mutable std::mutex m_;
    std::set<std::string> learned_;
};

}  // namespace allot::gc
