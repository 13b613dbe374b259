#include <doctest/doctest.h>

#include "store/memory_store.h"
#include "store_conformance.h"
#include "store_ref.h"

using namespace allot;

TEST_CASE("the in-memory store passes the store conformance suite") {
    store::MemoryStore s;
    test::storeConformance(s, "");
}

TEST_CASE("the in-memory store keeps concurrent writers consistent") {
    auto shared = std::make_shared<store::MemoryStore>();
    test::storeConcurrency([&] { return std::make_unique<test::StoreRef<store::MemoryStore>>(shared); }, "", 8);
}

TEST_CASE("injected faults surface as their codes") {
    store::MemoryStore s;
    s.failNext(1, core::Errc::Transient);
    CHECK(s.getPool("x").code() == core::Errc::Transient);
    CHECK(s.getPool("x").code() == core::Errc::NotFound);
    s.setUnreachable(true);
    CHECK(s.ping().code() == core::Errc::Transient);
}
