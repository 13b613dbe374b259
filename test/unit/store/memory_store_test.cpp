#include <doctest/doctest.h>

#include "store/memory_store.h"
#include "store_conformance.h"

using namespace allot;

TEST_CASE("the in-memory store passes the store conformance suite") {
    store::MemoryStore s;
    test::storeConformance(s, "");
}

TEST_CASE("the in-memory store keeps concurrent writers consistent") {
    auto shared = std::make_shared<store::MemoryStore>();
    // All writers share one store object through a non-owning adapter.
    struct Ref : store::PoolStore {
        std::shared_ptr<store::MemoryStore> s;
        explicit Ref(std::shared_ptr<store::MemoryStore> x) : s(std::move(x)) {}
        core::Result<store::Pool> getPool(const std::string& n) override { return s->getPool(n); }
        core::Result<store::Pool> createPool(const store::Pool& p) override { return s->createPool(p); }
        core::Result<store::Pool> updatePool(const store::Pool& p) override { return s->updatePool(p); }
        core::Result<std::vector<store::Pool>> listPools() override { return s->listPools(); }
        core::Result<store::Reservation> getReservation(const std::string& n) override { return s->getReservation(n); }
        core::Result<store::Reservation> createReservation(const store::Reservation& r) override {
            return s->createReservation(r);
        }
        core::Result<void> deleteReservation(const std::string& n, const std::string& v) override {
            return s->deleteReservation(n, v);
        }
        core::Result<std::vector<store::Reservation>> listReservations() override { return s->listReservations(); }
        core::Result<std::string> nodeSlice(const std::string& a, const std::string& b) override {
            return s->nodeSlice(a, b);
        }
        core::Result<void> ping() override { return s->ping(); }
    };
    test::storeConcurrency([&] { return std::make_unique<Ref>(shared); }, "", 8);
}

TEST_CASE("injected faults surface as their codes") {
    store::MemoryStore s;
    s.failNext(1, core::Errc::Transient);
    CHECK(s.getPool("x").code() == core::Errc::Transient);
    CHECK(s.getPool("x").code() == core::Errc::NotFound);
    s.setUnreachable(true);
    CHECK(s.ping().code() == core::Errc::Transient);
}
