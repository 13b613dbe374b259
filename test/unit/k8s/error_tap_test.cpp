#include "k8s/error_tap.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using allot::core::Errc;
using allot::core::makeError;
using allot::core::Result;
using allot::k8s::ErrorTap;

TEST_CASE("the error tap reports an unexpected failure and hands the result back unchanged") {
    std::vector<std::string> seen;
    ErrorTap tap([&](const allot::core::Error& e) { seen.push_back(e.message); });

    Result<int> r = tap(Result<int>(makeError(Errc::Transient, "apiserver down")));

    REQUIRE_FALSE(r);
    CHECK(r.code() == Errc::Transient);
    CHECK(r.error().message == "apiserver down");
    CHECK(seen == std::vector<std::string>{"apiserver down"});
}

TEST_CASE("the error tap keeps quiet about the outcomes a caller expects") {
    int calls = 0;
    ErrorTap tap([&](const allot::core::Error&) { ++calls; });

    for (Errc c : {Errc::NotFound, Errc::Conflict, Errc::AlreadyExists}) {
        CHECK(ErrorTap::expected(c));
        CHECK_FALSE(tap(Result<void>(makeError(c, "x"))));
    }
    CHECK(calls == 0);
    CHECK_FALSE(ErrorTap::expected(Errc::Internal));
}

TEST_CASE("the error tap passes a success through without reporting, and works with no hook") {
    int calls = 0;
    ErrorTap tap([&](const allot::core::Error&) { ++calls; });
    auto ok = tap(Result<int>(7));
    REQUIRE(ok);
    CHECK(*ok == 7);
    CHECK(calls == 0);

    ErrorTap none;
    CHECK_FALSE(none(Result<int>(makeError(Errc::Internal, "x"))));
}
