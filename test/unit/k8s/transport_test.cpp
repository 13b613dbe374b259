#include "k8s/transport.h"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "fake_server.h"

using allot::k8s::HttpClient;
using Kind = allot::k8s::TransportError::Kind;
using namespace std::chrono_literals;

namespace {

HttpClient plainClient(allot::k8s::TlsConfig tls = {}) {
    auto c = HttpClient::create(std::move(tls), "allot-test");
    REQUIRE(c.ok());
    return std::move(*c);
}

bool has(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("a refused connection is a Connect transport error naming the method and URL") {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    auto http = plainClient();
    auto r = http.send("GET", "http://127.0.0.1:1/api", {}, {}, 2s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == Kind::Connect);
    CHECK(has(r.error().message, "GET http://127.0.0.1:1/api: "));
}

TEST_CASE("a server that takes the connection and never answers is a Timeout") {
    allot::test::FakeServer silent({});  // no replies: it listens and never accepts
    auto http = plainClient();
    auto r = http.send("PUT", silent.url() + "/api", "{}", "application/json", 200ms);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == Kind::Timeout);
    CHECK(has(r.error().message, "PUT " + silent.url() + "/api: "));
}

TEST_CASE("a request with no time left is a Timeout, and nothing is sent") {
    auto http = plainClient();
    auto r = http.send("GET", "http://127.0.0.1:1/api", {}, {}, 0ms);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == Kind::Timeout);
    CHECK(has(r.error().message, "no time left"));
    auto s = http.stream("http://127.0.0.1:1/api", -1ms, [](std::string_view) { return true; });
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().kind == Kind::Timeout);
}

TEST_CASE("a URL of another scheme than http(s) is LocalConfig: retrying cannot help") {
    auto http = plainClient();
    auto r = http.send("GET", "ftp://127.0.0.1:1/api", {}, {}, 2s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == Kind::LocalConfig);
}

TEST_CASE("a CA file that cannot be read is LocalConfig, found at the TLS handshake") {
    allot::test::FakeServer silent({});  // no replies: it listens and never accepts
    auto http = plainClient({.caFile = "/nonexistent/allot/ca.crt"});
    auto r = http.send("GET", "https" + silent.url().substr(4) + "/api", {}, {}, 2s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().kind == Kind::LocalConfig);
}

TEST_CASE("an HTTP error status is an answer, never a transport error") {
    allot::test::FakeServer server({{allot::test::response(503, "busy")}});
    auto http = plainClient();
    auto r = http.send("GET", server.url() + "/api", {}, {}, 2s);
    REQUIRE(r.ok());
    CHECK(r->status == 503);
    CHECK(r->body == "busy");
}
