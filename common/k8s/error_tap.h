#pragma once
// The one place that decides which failed API requests a caller is told about. The stores
// over the API server (K8sStore, K8sNodeSliceStore) and K8sCluster pass every result through
// an ErrorTap; allot-gc hooks its error metric and readiness on it. NotFound, Conflict and
// AlreadyExists are expected outcomes (a pod gone, a write that lost a race, a create that
// found its object) and are not reported.

#include <functional>
#include <utility>

#include "core/result.h"

namespace allot::k8s {

class ErrorTap {
  public:
    using Fn = std::function<void(const core::Error&)>;

    ErrorTap() = default;
    explicit ErrorTap(Fn fn) : fn_(std::move(fn)) {}

    static bool expected(core::Errc c) {
        return c == core::Errc::NotFound || c == core::Errc::Conflict ||
               c == core::Errc::AlreadyExists;
    }

    // Hands `r` back unchanged, after reporting it when it failed unexpectedly.
    template <typename T>
    core::Result<T> operator()(core::Result<T> r) const {
        if (!r && fn_ && !expected(r.code())) fn_(r.error());
        return r;
    }

    const Fn& fn() const { return fn_; }

  private:
    Fn fn_;
};

}  // namespace allot::k8s
