// k8s::Client's requests over the loopback FakeServer: what each call sends, and which Errc
// a deadline, a transport failure, an HTTP status, a body or a rejected token becomes.
#include "k8s/client.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "client_fixture.h"

using allot::core::Errc;
using allot::k8s::Client;
using allot::k8s::ClusterConfig;
using allot::k8s::WatchEvent;
using allot::test::clientFor;
using allot::test::configFor;
using allot::test::FakeServer;
using allot::test::has;
using allot::test::kPods;
using allot::test::response;

TEST_CASE("a request past the overall deadline fails as Transient without being sent") {
    Client::Options opts;
    opts.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
    auto client = Client::fromConfig(configFor("https://127.0.0.1:1"), opts);
    REQUIRE(client.ok());
    auto r = client->get("/api/v1/namespaces");
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == Errc::Transient);
    CHECK(has(r.error().message, "deadline exceeded"));
    CHECK(client->requestCount() == 0);

    auto w = client->watch("/api/v1/pods", {}, [](const WatchEvent&) { return true; });
    REQUIRE_FALSE(w.ok());
    CHECK(w.code() == Errc::Transient);
}

TEST_CASE("a refused connection is a Transient transport error, not an HTTP status") {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    auto client = Client::fromConfig(configFor("https://127.0.0.1:1"));
    REQUIRE(client.ok());
    auto r = client->get("/api/v1/namespaces");
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == Errc::Transient);
    CHECK(has(r.error().message, "127.0.0.1:1"));
    CHECK(client->requestCount() == 1);
}

TEST_CASE(
    "a transport failure becomes Transient, or InvalidConfig when only the setup can fix it") {
    using Kind = allot::k8s::TransportError::Kind;
    const std::pair<Kind, Errc> table[] = {
        {Kind::Connect, Errc::Transient}, {Kind::Timeout, Errc::Transient},
        {Kind::Tls, Errc::Transient},     {Kind::Protocol, Errc::Transient},
        {Kind::Relayed, Errc::Transient}, {Kind::LocalConfig, Errc::InvalidConfig},
        {Kind::Internal, Errc::Internal},
    };
    for (const auto& [kind, errc] : table) {
        CAPTURE(static_cast<int>(kind));
        const auto e = allot::k8s::toError({kind, "GET https://api:6443/x: what curl said"});
        CHECK(e.code == errc);
        CHECK(e.message == "GET https://api:6443/x: what curl said");
    }
}

TEST_CASE("a client without a server address is a configuration error") {
    auto client = Client::fromConfig(ClusterConfig{});
    REQUIRE_FALSE(client.ok());
    CHECK(client.code() == Errc::InvalidConfig);
}

TEST_CASE("each call sends its method, body, content type and the bearer token") {
    FakeServer server({{response(201, R"({"kind":"ConfigMap"})")},
                       {response(200, R"({"kind":"ConfigMap"})")},
                       {response(200, R"({"kind":"ConfigMap"})")},
                       {response(200, R"({"kind":"Status","status":"Success"})")}});
    Client client = clientFor(server);
    auto body = allot::json::parse(R"({"metadata":{"name":"x"}})");
    REQUIRE(body.ok());
    CHECK(client.create("/api/v1/namespaces/d/configmaps", *body).ok());
    CHECK(client
              .patch("/api/v1/namespaces/d/configmaps/x", *body, allot::k8s::PatchType::Apply,
                     "allot", true)
              .ok());
    CHECK(client.patch("/api/v1/namespaces/d/configmaps/x", *body, allot::k8s::PatchType::Merge)
              .ok());
    CHECK(
        client.remove("/api/v1/namespaces/d/configmaps/x", allot::k8s::Preconditions{"uid-1", "42"})
            .ok());
    CHECK(client.requestCount() == 4);
    const auto& reqs = server.requests();
    REQUIRE(reqs.size() == 4);
    CHECK(reqs[0].rfind("POST /api/v1/namespaces/d/configmaps HTTP/1.1\r\n", 0) == 0);
    CHECK(has(reqs[0], "Authorization: Bearer test-token\r\n"));
    CHECK(has(reqs[0], "Content-Type: application/json\r\n"));
    CHECK(has(reqs[0], R"({"metadata":{"name":"x"}})"));
    CHECK(reqs[1].rfind("PATCH /api/v1/namespaces/d/configmaps/x?fieldManager=allot&force=true ",
                        0) == 0);
    CHECK(has(reqs[1], "Content-Type: application/apply-patch+yaml\r\n"));
    CHECK(reqs[2].rfind("PATCH /api/v1/namespaces/d/configmaps/x HTTP/1.1", 0) == 0);
    CHECK(has(reqs[2], "Content-Type: application/merge-patch+json\r\n"));
    CHECK(reqs[3].rfind("DELETE /api/v1/namespaces/d/configmaps/x HTTP/1.1", 0) == 0);
    CHECK(has(reqs[3], R"("preconditions":{"uid":"uid-1","resourceVersion":"42"})"));
}

TEST_CASE("a 429 answer is Transient and its Retry-After is kept for the caller") {
    FakeServer server(
        {{response(429, R"({"kind":"Status","reason":"TooManyRequests"})", "Retry-After: 7\r\n")},
         {response(200, "{}")}});
    Client client = clientFor(server);
    auto r = client.get(kPods);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == Errc::Transient);
    CHECK(has(r.error().message, "retry after 7s"));
    REQUIRE(client.lastRetryAfter().has_value());
    CHECK(*client.lastRetryAfter() == 7);
    CHECK(client.get(kPods).ok());
    CHECK_FALSE(client.lastRetryAfter().has_value());
}

TEST_CASE("a 2xx answer whose body is not JSON is a Decode error") {
    FakeServer server({{response(200, "<html>proxy says hi</html>")}});
    Client client = clientFor(server);
    auto r = client.get(kPods);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == Errc::Decode);
}

TEST_CASE("after a 401 the next request re-reads a rotated token file") {
    char path[] = "/tmp/allot-k8s-token-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    auto writeToken = [&](const std::string& t) {
        REQUIRE(::ftruncate(fd, 0) == 0);
        REQUIRE(::pwrite(fd, t.data(), t.size(), 0) == static_cast<ssize_t>(t.size()));
    };
    writeToken("old-token\n");
    FakeServer server(
        {{response(401, R"({"kind":"Status","reason":"Unauthorized"})")}, {response(200, "{}")}});
    ClusterConfig cfg = configFor(server.url());
    cfg.tokenFile = path;
    auto client = Client::fromConfig(cfg);
    REQUIRE(client.ok());
    auto first = client->get(kPods);
    REQUIRE_FALSE(first.ok());
    CHECK(first.code() == Errc::Unauthorized);
    CHECK(has(first.error().message, "user \"tester\""));
    CHECK_FALSE(has(first.error().message, "old-token"));
    writeToken("new-token\n");
    CHECK(client->get(kPods).ok());
    const auto& reqs = server.requests();
    REQUIRE(reqs.size() == 2);
    CHECK(has(reqs[0], "Authorization: Bearer old-token\r\n"));
    CHECK(has(reqs[1], "Authorization: Bearer new-token\r\n"));
    ::close(fd);
    ::unlink(path);
}
