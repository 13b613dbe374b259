#include "k8s/client.h"

#include <doctest/doctest.h>

using allot::core::Errc;
using allot::k8s::Client;
using allot::k8s::ClusterConfig;

namespace {

ClusterConfig unreachable() {
    ClusterConfig cfg;
    cfg.server = "https://127.0.0.1:1";  // nothing listens on port 1: refused at once
    cfg.token = "t";
    cfg.identity = "test";
    return cfg;
}

}  // namespace

TEST_CASE("a request past the overall deadline fails as Transient without being sent") {
    Client::Options opts;
    opts.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
    auto client = Client::fromConfig(unreachable(), opts);
    REQUIRE(client.ok());
    auto r = client->get("/api/v1/namespaces");
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == Errc::Transient);
    CHECK(r.error().message.find("deadline exceeded") != std::string::npos);
    CHECK(client->requestCount() == 0);

    auto w = client->watch("/api/v1/pods", {}, [](const allot::k8s::WatchEvent&) { return true; });
    REQUIRE_FALSE(w.ok());
    CHECK(w.code() == Errc::Transient);
}

TEST_CASE("a refused connection is a Transient transport error, not an HTTP status") {
    auto client = Client::fromConfig(unreachable());
    REQUIRE(client.ok());
    auto r = client->get("/api/v1/namespaces");
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == Errc::Transient);
    CHECK(r.error().message.find("127.0.0.1:1") != std::string::npos);
    CHECK(client->requestCount() == 1);
    CHECK_FALSE(client->lastRetryAfter().has_value());
}

TEST_CASE("a client without a server address is a configuration error") {
    auto client = Client::fromConfig(ClusterConfig{});
    REQUIRE_FALSE(client.ok());
    CHECK(client.code() == Errc::InvalidConfig);
}
