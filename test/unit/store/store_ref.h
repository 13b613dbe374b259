#pragma once
// A non-owning PoolStore that forwards to a shared one: many "processes" (plugin runs,
// threads) over one store, as many plugin invocations share one API server.

#include <memory>

#include "store/pool_store.h"

namespace allot::test {

template <typename Store>
class StoreRef : public store::PoolStore {
  public:
    explicit StoreRef(std::shared_ptr<Store> s) : s_(std::move(s)) {}
    core::Result<store::Pool> getPool(const std::string& n) override { return s_->getPool(n); }
    core::Result<store::Pool> createPool(const store::Pool& p) override {
        return s_->createPool(p);
    }
    core::Result<store::Pool> updatePool(store::Pool p) override {
        return s_->updatePool(std::move(p));
    }
    core::Result<void> eachPool(const std::function<bool(store::Pool&)>& fn,
                                const BadPool& bad) override {
        return s_->eachPool(fn, bad);
    }
    core::Result<store::Reservation> getReservation(const std::string& n) override {
        return s_->getReservation(n);
    }
    core::Result<store::Reservation> createReservation(const store::Reservation& r) override {
        return s_->createReservation(r);
    }
    core::Result<void> deleteReservation(const std::string& n, const std::string& v) override {
        return s_->deleteReservation(n, v);
    }
    core::Result<void> eachReservation(
        const std::function<bool(store::Reservation&)>& fn) override {
        return s_->eachReservation(fn);
    }
    core::Result<store::NodeSlice> nodeSlice(const std::string& a, const std::string& b,
                                             bool fresh) override {
        return s_->nodeSlice(a, b, fresh);
    }
    core::Result<void> ping() override { return s_->ping(); }
    void setSizePolicy(const store::SizePolicy& p) override { s_->setSizePolicy(p); }

  private:
    std::shared_ptr<Store> s_;
};

}  // namespace allot::test
