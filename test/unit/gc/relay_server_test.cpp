#include "gc-sidecar/relay_server.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

using allot::gc::RelayServer;
using allot::gc::RelayServerOptions;
using allot::k8s::RelayClient;
using allot::k8s::RelayRequest;
using allot::k8s::RelayResponse;

namespace {

const std::string kServer = "https://10.96.0.1:443";
const std::string kPool = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools/10.0.0.0-24";

struct Running {
    std::string dir;
    RelayServerOptions opts;
    std::vector<RelayRequest> forwarded;
    std::unique_ptr<RelayServer> server;
    std::thread thread;

    Running() {
        char tmpl[] = "/tmp/allot-relay-srv-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        dir = tmpl;
        opts.socketPath = dir + "/sub/api.sock";
        opts.server = kServer;
        server = std::make_unique<RelayServer>(opts, [this](const RelayRequest& r) {
            forwarded.push_back(r);
            return RelayResponse{RelayResponse::Kind::Answered, 200, -1, R"({"kind":"IPPool"})"};
        });
        REQUIRE(server->bind().ok());
        thread = std::thread([this] { server->serve(); });
    }
    ~Running() {
        server->stop();
        thread.join();
        std::filesystem::remove_all(dir);
    }
};

}  // namespace

TEST_CASE("the relay socket is root's alone and forwards pool requests for its own server") {
    Running r;
    struct stat st{};
    REQUIRE(::stat(r.opts.socketPath.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat((r.dir + "/sub").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);

    auto c = RelayClient::connect(r.opts.socketPath);
    REQUIRE(c.has_value());
    bool sent = false;
    auto ok = c->send({kServer, "GET", kPool, "", "", 1000}, std::chrono::seconds(5), sent);
    REQUIRE(ok.ok());
    CHECK(sent);
    CHECK(ok->kind == RelayResponse::Kind::Answered);
    CHECK(ok->status == 200);
    // The same connection serves the next request; one for another server is refused unsent.
    auto other = c->send({"https://elsewhere:6443", "GET", kPool, "", "", 1000}, std::chrono::seconds(5), sent);
    REQUIRE(other.ok());
    CHECK(other->kind == RelayResponse::Kind::Refused);
    auto secret = c->send({kServer, "GET", "/api/v1/namespaces/kube-system/secrets/x", "", "", 1000},
                          std::chrono::seconds(5), sent);
    REQUIRE(secret.ok());
    CHECK(secret->kind == RelayResponse::Kind::Refused);
    CHECK(r.forwarded.size() == 1);
    CHECK(r.server->served() == 3);
}

TEST_CASE("a relay that is not there is no relay: the plugin goes direct") {
    CHECK_FALSE(RelayClient::connect("/nonexistent/allot/api.sock").has_value());
    CHECK_FALSE(RelayClient::connect("").has_value());
}
