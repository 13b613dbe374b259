#include "gc-sidecar/relay/relay_server.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

using allot::gc::RelayServer;
using allot::gc::RelayServerOptions;
using allot::k8s::RelayClient;
using allot::k8s::RelayRequest;
using allot::k8s::RelayResponse;

namespace {

const std::string kServer = "https://10.96.0.1:443";
const std::string kPool =
    "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools/10.0.0.0-24";

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
    struct stat st {};
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
    auto other = c->send({"https://elsewhere:6443", "GET", kPool, "", "", 1000},
                         std::chrono::seconds(5), sent);
    REQUIRE(other.ok());
    CHECK(other->kind == RelayResponse::Kind::Refused);
    auto secret =
        c->send({kServer, "GET", "/api/v1/namespaces/kube-system/secrets/x", "", "", 1000},
                std::chrono::seconds(5), sent);
    REQUIRE(secret.ok());
    CHECK(secret->kind == RelayResponse::Kind::Refused);
    // The Accept allot sends for a pool write is forwarded; any other is refused, never made a
    // header on allot-gc's connection.
    allot::k8s::RelayRequest put{kServer, "PUT", kPool, "application/json", "{}", 1000};
    put.accept = std::string(allot::k8s::kAcceptMetadata);
    auto meta = c->send(put, std::chrono::seconds(5), sent);
    REQUIRE(meta.ok());
    CHECK(meta->kind == RelayResponse::Kind::Answered);
    put.accept = "application/json\r\nImpersonate-User: admin";
    auto injected = c->send(put, std::chrono::seconds(5), sent);
    REQUIRE(injected.ok());
    CHECK(injected->kind == RelayResponse::Kind::Refused);
    REQUIRE(r.forwarded.size() == 2);
    CHECK(r.forwarded[1].accept == allot::k8s::kAcceptMetadata);
    CHECK(r.server->served() == 5);
}

TEST_CASE("a stopping relay removes its own socket") {
    auto r = std::make_unique<Running>();
    const std::string path = r->opts.socketPath;
    REQUIRE(std::filesystem::exists(path));
    r->server->stop();
    CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("a stopping relay leaves a socket a successor bound at its path, and a replacing file") {
    Running old;
    const std::string path = old.opts.socketPath;
    // The next pod's relay takes the path over (the same hostPath) before the old one stops.
    RelayServer next(old.opts, [](const RelayRequest&) {
        return RelayResponse{RelayResponse::Kind::Answered, 200, -1, "{}"};
    });
    REQUIRE(next.bind().ok());
    std::thread serving([&] { next.serve(); });
    old.server->stop();
    CHECK(std::filesystem::is_socket(path));
    auto c = RelayClient::connect(path);
    CHECK(c.has_value());  // the successor still serves at the path
    c.reset();
    next.stop();
    serving.join();
    CHECK_FALSE(std::filesystem::exists(path));  // and removes its own when it stops

    // Any other file put there after the bind stays too.
    RelayServer third(old.opts, [](const RelayRequest&) { return RelayResponse{}; });
    REQUIRE(third.bind().ok());
    std::filesystem::remove(path);
    std::ofstream(path) << "not the relay's";
    third.stop();
    CHECK(std::filesystem::is_regular_file(path));
}

TEST_CASE("a relay that is not there is no relay: the plugin goes direct") {
    CHECK_FALSE(RelayClient::connect("/nonexistent/allot/api.sock").has_value());
    CHECK_FALSE(RelayClient::connect("").has_value());
}

TEST_CASE(
    "a relay whose API server is down refuses work at once, and serves again once it is back") {
    char tmpl[] = "/tmp/allot-relay-down-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    std::string dir = tmpl;
    RelayServerOptions opts;
    opts.socketPath = dir + "/api.sock";
    opts.server = kServer;
    opts.probeInterval = std::chrono::milliseconds(100);
    opts.health = std::make_shared<allot::gc::RelayHealth>();
    std::atomic<bool> apiUp{false};
    std::atomic<int> sentOn{0};
    auto health = opts.health;
    RelayServer server(opts, [&](const RelayRequest& r) {
        if (r.path != allot::gc::kRelayProbePath) ++sentOn;
        if (!apiUp.load()) {
            health->failed("connect to 10.96.0.1:443: connection refused");
            return RelayResponse{RelayResponse::Kind::Failed, 0, -1, "connection refused"};
        }
        health->answered();
        return RelayResponse{RelayResponse::Kind::Answered, 200, -1, "{}"};
    });
    REQUIRE(server.bind().ok());
    std::thread t([&] { server.serve(); });

    auto c = RelayClient::connect(opts.socketPath);
    REQUIRE(c.has_value());
    bool sent = false;
    auto first = c->send({kServer, "GET", kPool, "", "", 1000}, std::chrono::seconds(5), sent);
    REQUIRE(first.ok());
    CHECK(first->kind == RelayResponse::Kind::Failed);
    // Down: refused unsent, so the plugin goes direct instead of waiting on this relay.
    auto t0 = std::chrono::steady_clock::now();
    auto second = c->send({kServer, "GET", kPool, "", "", 1000}, std::chrono::seconds(5), sent);
    REQUIRE(second.ok());
    CHECK(second->kind == RelayResponse::Kind::Refused);
    CHECK(second->body.find("cannot reach the API server") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500));
    CHECK(sentOn.load() == 1);
    // Back: the probe sees it, and pool requests are relayed again.
    apiUp.store(true);
    std::optional<allot::core::Result<RelayResponse>> again;
    for (int i = 0; i < 50; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (!health->down.load()) break;
    }
    CHECK_FALSE(health->down.load());
    auto third = c->send({kServer, "GET", kPool, "", "", 1000}, std::chrono::seconds(5), sent);
    REQUIRE(third.ok());
    CHECK(third->kind == RelayResponse::Kind::Answered);
    server.stop();
    t.join();
    std::filesystem::remove_all(dir);
}

TEST_CASE("the client pool marks the API server down on a transport failure") {
    auto health = std::make_shared<allot::gc::RelayHealth>();
    auto forward = allot::gc::clientForward(
        [] {
            allot::k8s::ClusterConfig cfg;
            cfg.server = "https://127.0.0.1:1";  // nothing listens
            cfg.token = "t";
            auto c = allot::k8s::Client::fromConfig(cfg);
            return c ? std::optional<allot::k8s::Client>(std::move(*c)) : std::nullopt;
        },
        2, health);
    auto r = forward({kServer, "GET", kPool, "", "", 1000});
    CHECK(r.kind == RelayResponse::Kind::Failed);
    CHECK(health->down.load());
    // Queued requests are now refused unsent.
    auto next = forward({kServer, "GET", kPool, "", "", 1000});
    CHECK(next.kind == RelayResponse::Kind::Refused);
}

TEST_CASE("a request that wants an acknowledgement gets one before its answer") {
    Running r;
    auto c = RelayClient::connect(r.opts.socketPath);
    REQUIRE(c.has_value());
    bool sent = false;
    // send() asks for the acknowledgement and reads past it to the answer.
    auto ok = c->send({kServer, "GET", kPool, "", "", 1000}, std::chrono::seconds(5), sent);
    REQUIRE(ok.ok());
    CHECK(sent);
    CHECK(ok->kind == RelayResponse::Kind::Answered);
    REQUIRE(r.forwarded.size() == 1);
    CHECK(r.forwarded[0].wantAck);
}

TEST_CASE(
    "API clients go to waiting requests in arrival order, each waiting only until its "
    "deadline") {
    using allot::gc::ClientTurns;
    ClientTurns turns(1);
    REQUIRE(turns.take(ClientTurns::Clock::now()));  // the one client, busy
    // No client within its deadline: no turn (the relay then answers 429, not sent).
    CHECK_FALSE(turns.take(ClientTurns::Clock::now() + std::chrono::milliseconds(20)));
    CHECK(turns.waiting() == 0);
    std::mutex mu;
    std::vector<int> order;
    std::vector<std::thread> waiters;
    for (int i = 0; i < 4; ++i) {
        waiters.emplace_back([&, i] {
            REQUIRE(turns.take(ClientTurns::Clock::now() + std::chrono::seconds(60)));
            {
                std::lock_guard l(mu);
                order.push_back(i);
            }
            turns.give();
        });
        // The next one arrives only once this one waits.
        while (turns.waiting() < static_cast<size_t>(i + 1)) std::this_thread::yield();
    }
    turns.give();
    for (auto& t : waiters) t.join();
    CHECK(order == std::vector<int>{0, 1, 2, 3});
}
