#pragma once
// k8s::Client's tests: a client of the loopback FakeServer (fake_server.h) with a bearer token,
// and what its requests and errors are checked with.

#include <doctest/doctest.h>

#include <string>
#include <utility>

#include "fake_server.h"
#include "k8s/client.h"

namespace allot::test {

inline k8s::ClusterConfig configFor(const std::string& server) {
    k8s::ClusterConfig cfg;
    cfg.server = server;
    cfg.token = "test-token";
    cfg.identity = "user \"tester\" of context \"t\"";
    return cfg;
}

inline k8s::Client clientFor(const FakeServer& server) {
    auto c = k8s::Client::fromConfig(configFor(server.url()));
    REQUIRE(c.ok());
    return std::move(*c);
}

inline bool has(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

inline const std::string kPods = "/api/v1/namespaces/default/pods";

}  // namespace allot::test
