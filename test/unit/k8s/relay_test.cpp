// The node relay (k8s/relay.h): its frames, what it may carry, and how k8s::Client sends a
// pool request through it, or direct when the relay refuses, fails or does not answer.
#include "k8s/relay.h"

#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client_fixture.h"
#include "k8s/client.h"

using allot::k8s::Client;
using allot::test::configFor;
using allot::test::FakeServer;
using allot::test::has;
using allot::test::kPods;
using allot::test::response;

namespace {

// A relay's listening Unix socket in a scratch directory; acceptOne serves one connection on a
// thread of its own (closed after `serve`).
class RelaySocket {
  public:
    explicit RelaySocket(const char* prefix) {
        std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
        REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
        dir_ = tmpl;
        path_ = dir_ + "/api.sock";
        fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, path_.c_str(), path_.size());
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(fd_, 4) == 0);
    }
    RelaySocket(const RelaySocket&) = delete;
    RelaySocket& operator=(const RelaySocket&) = delete;
    ~RelaySocket() {
        ::shutdown(fd_, SHUT_RDWR);
        if (thread_.joinable()) thread_.join();
        ::close(fd_);
        ::unlink(path_.c_str());
        ::rmdir(dir_.c_str());
    }
    const std::string& path() const { return path_; }
    void acceptOne(int pollMs, std::function<void(int)> serve) {
        thread_ = std::thread([this, pollMs, serve = std::move(serve)] {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, pollMs) != 1) return;
            int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            serve(c);
            ::close(c);
        });
    }

  private:
    std::string dir_, path_;
    int fd_ = -1;
    std::thread thread_;
};

// A node relay stand-in: answers every frame of one connection with `answer`, recording the
// requests.
class FakeRelay {
  public:
    explicit FakeRelay(
        std::function<allot::k8s::RelayResponse(const allot::k8s::RelayRequest&)> answer)
        : answer_(std::move(answer)) {
        sock_.acceptOne(5000, [this](int c) {
            for (;;) {
                auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                auto frame = allot::k8s::readFrame(c, allot::k8s::kMaxRelayFrame, deadline);
                if (!frame) break;
                auto req = allot::k8s::decodeRelayRequest(*frame);
                REQUIRE(req.has_value());
                seen_.push_back(*req);
                if (!allot::k8s::writeFrame(c, allot::k8s::encodeRelayResponse(answer_(*req)),
                                            deadline))
                    break;
            }
        });
    }
    const std::string& path() const { return sock_.path(); }
    const std::vector<allot::k8s::RelayRequest>& seen() { return seen_; }

  private:
    std::function<allot::k8s::RelayResponse(const allot::k8s::RelayRequest&)> answer_;
    std::vector<allot::k8s::RelayRequest> seen_;
    RelaySocket sock_{"allot-relay"};  // last: its thread is joined before the members it uses go
};

const std::string kReservations =
    "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/overlappingrangeipreservations";

}  // namespace

TEST_CASE("pool requests go through the node relay and the rest go direct") {
    FakeServer server({{response(200, R"({"kind":"Pod"})")}});
    FakeRelay relay([](const allot::k8s::RelayRequest&) {
        return allot::k8s::RelayResponse{allot::k8s::RelayResponse::Kind::Answered, 201, -1,
                                         R"({"kind":"OverlappingRangeIPReservation"})"};
    });
    Client::Options o;
    o.relaySocket = relay.path();
    auto client = Client::fromConfig(configFor(server.url()), o);
    REQUIRE(client.ok());
    auto body = allot::json::parse(R"({"metadata":{"name":"10.0.0.1"}})");
    auto made = client->create(kReservations, *body);
    REQUIRE(made.ok());
    CHECK(client->get(kPods).ok());  // a list is not the plugin's request: direct
    CHECK(client->relayedCount() == 1);
    CHECK(client->requestCount() == 2);
    CHECK(server.requests().size() == 1);
    REQUIRE(relay.seen().size() == 1);
    CHECK(relay.seen()[0].server == server.url());
    CHECK(relay.seen()[0].method == "POST");
    CHECK(relay.seen()[0].path == kReservations);
    CHECK(has(relay.seen()[0].body, "10.0.0.1"));
    // The relay speaks with its own identity: no token crosses the socket.
    CHECK_FALSE(has(relay.seen()[0].body + relay.seen()[0].contentType, "test-token"));
}

TEST_CASE("a relay that refuses sends the client direct, for good") {
    FakeServer server({{response(201, R"({"kind":"OverlappingRangeIPReservation"})")},
                       {response(201, R"({"kind":"OverlappingRangeIPReservation"})")}});
    FakeRelay relay([](const allot::k8s::RelayRequest&) {
        return allot::k8s::RelayResponse{allot::k8s::RelayResponse::Kind::Refused, 0, -1,
                                         "another server"};
    });
    Client::Options o;
    o.relaySocket = relay.path();
    auto client = Client::fromConfig(configFor(server.url()), o);
    REQUIRE(client.ok());
    auto body = allot::json::parse(R"({"metadata":{"name":"10.0.0.1"}})");
    CHECK(client->create(kReservations, *body).ok());
    CHECK(client->create(kReservations, *body).ok());
    CHECK(client->relayedCount() == 0);
    CHECK(relay.seen().size() == 1);
    CHECK(server.requests().size() == 2);
}

TEST_CASE("an answer the relay could not get is Transient: the request may have been applied") {
    FakeServer server({});
    FakeRelay relay([](const allot::k8s::RelayRequest&) {
        return allot::k8s::RelayResponse{allot::k8s::RelayResponse::Kind::Failed, 0, -1,
                                         "timed out"};
    });
    Client::Options o;
    o.relaySocket = relay.path();
    auto client = Client::fromConfig(configFor(server.url()), o);
    REQUIRE(client.ok());
    auto body = allot::json::parse(R"({"metadata":{"name":"10.0.0.1"}})");
    auto r = client->create(kReservations, *body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == allot::core::Errc::Transient);
    CHECK(has(r.error().message, "timed out"));
}

TEST_CASE("relay frames round-trip, and truncated or foreign frames are rejected") {
    using allot::k8s::RelayRequest;
    RelayRequest r{"https://10.0.0.1:6443", "PUT", "/apis/x", "application/json",
                   std::string("a\0b", 3),  1234};
    auto frame = allot::k8s::encodeRelayRequest(r);
    auto back = allot::k8s::decodeRelayRequest(frame);
    REQUIRE(back.has_value());
    CHECK(back->server == r.server);
    CHECK(back->body == r.body);
    CHECK(back->timeoutMs == 1234);
    for (size_t cut = 0; cut < frame.size(); ++cut)
        CHECK_FALSE(allot::k8s::decodeRelayRequest(frame.substr(0, cut)).has_value());
    CHECK_FALSE(allot::k8s::decodeRelayRequest(frame + "x").has_value());
    CHECK_FALSE(allot::k8s::decodeRelayRequest("GET / HTTP/1.1\r\n\r\n").has_value());
    // An Accept rides in a frame of its own magic, after the timeout; without one, the frame
    // is byte for byte what older relays read.
    r.wantAck = true;
    const std::string plain = allot::k8s::encodeRelayRequest(r);
    r.accept = std::string(allot::k8s::kAcceptMetadata);
    const std::string withAccept = allot::k8s::encodeRelayRequest(r);
    CHECK(plain.substr(0, 4) == "ALR2");
    CHECK(withAccept.substr(0, 4) == "ALR3");
    CHECK(withAccept.substr(4, plain.size() - 4) == plain.substr(4));
    auto acc = allot::k8s::decodeRelayRequest(withAccept);
    REQUIRE(acc.has_value());
    CHECK(acc->wantAck);
    CHECK(acc->accept == allot::k8s::kAcceptMetadata);
    CHECK(acc->timeoutMs == 1234);
    CHECK(allot::k8s::decodeRelayRequest(plain)->accept.empty());
    for (size_t cut = 0; cut < withAccept.size(); ++cut)
        CHECK_FALSE(allot::k8s::decodeRelayRequest(withAccept.substr(0, cut)).has_value());
    allot::k8s::RelayResponse resp{allot::k8s::RelayResponse::Kind::Answered, 409, 3, "{}"};
    auto rb = allot::k8s::decodeRelayResponse(allot::k8s::encodeRelayResponse(resp));
    REQUIRE(rb.has_value());
    CHECK(rb->status == 409);
    CHECK(rb->retryAfterSeconds == 3);
}

TEST_CASE(
    "a relay frame read that times out, meets a closed peer or is over the limit says which") {
    using Kind = allot::k8s::TransportError::Kind;
    const auto soon = [] {
        return std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    };
    int quiet[2], closed[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, quiet) == 0);
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, closed) == 0);

    auto nothing = allot::k8s::readFrame(quiet[0], 1024, soon());
    REQUIRE_FALSE(nothing.ok());
    CHECK(nothing.error().kind == Kind::Timeout);
    CHECK(has(nothing.error().message, "node relay: timed out receiving"));

    REQUIRE(allot::k8s::writeFrame(quiet[1], std::string(2048, 'x'), soon()).ok());
    auto big = allot::k8s::readFrame(quiet[0], 1024, soon());
    REQUIRE_FALSE(big.ok());
    CHECK(big.error().kind == Kind::Protocol);
    CHECK(has(big.error().message, "frame of 2048 bytes is over the limit"));

    ::close(closed[1]);
    auto gone = allot::k8s::readFrame(closed[0], 1024, soon());
    REQUIRE_FALSE(gone.ok());
    CHECK(gone.error().kind == Kind::Connect);
    CHECK(has(gone.error().message, "node relay: connection closed"));
    for (int fd : {quiet[0], quiet[1], closed[0]}) ::close(fd);
}

TEST_CASE("the relay carries only the plugin's pool requests") {
    using allot::k8s::relayAllowed;
    const std::string base = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/";
    CHECK(relayAllowed("GET", base + "ippools/10.0.0.0-24"));
    CHECK(relayAllowed("PUT", base + "ippools/net-10.0.0.0-24"));
    CHECK(relayAllowed("POST", base + "ippools"));
    CHECK(relayAllowed("POST", base + "overlappingrangeipreservations"));
    CHECK(relayAllowed("GET", base + "overlappingrangeipreservations/10.0.0.5"));
    CHECK(relayAllowed("DELETE", base + "overlappingrangeipreservations/10.0.0.5"));
    CHECK(relayAllowed("GET", base + "nodeslicepools/net"));
    CHECK_FALSE(relayAllowed("DELETE", base + "ippools/10.0.0.0-24"));
    CHECK_FALSE(relayAllowed("GET", base + "ippools"));  // lists are not the plugin's
    CHECK_FALSE(relayAllowed("PUT", base + "nodeslicepools/net"));
    CHECK_FALSE(relayAllowed("GET", "/api/v1/namespaces/kube-system/secrets/x"));
    CHECK_FALSE(relayAllowed("GET", base + "ippools/../../../../api/v1/secrets"));
    CHECK_FALSE(relayAllowed("GET", base + "ippools/a/b"));
    CHECK_FALSE(relayAllowed("GET", base + "ippools/x?watch=true"));
    CHECK_FALSE(
        relayAllowed("GET", "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/../ippools/x"));
    CHECK_FALSE(relayAllowed("PATCH", base + "ippools/x"));
}

TEST_CASE("the relay carries an IPAMClaim ADD's reads of its pod and claim, and the status write") {
    using allot::k8s::relayAllowed;
    const std::string claims = "/apis/k8s.cni.cncf.io/v1alpha1/namespaces/vms/ipamclaims/";
    CHECK(relayAllowed("GET", "/api/v1/namespaces/vms/pods/launcher-a"));
    CHECK(relayAllowed("GET", claims + "vm-a.blue"));
    CHECK(relayAllowed("PUT", claims + "vm-a.blue/status"));
    CHECK_FALSE(relayAllowed("PUT", claims + "vm-a.blue"));  // the spec is not the plugin's
    CHECK_FALSE(relayAllowed("GET", claims + "vm-a.blue/status"));
    CHECK_FALSE(relayAllowed("DELETE", claims + "vm-a.blue"));
    CHECK_FALSE(relayAllowed("GET", "/apis/k8s.cni.cncf.io/v1alpha1/namespaces/vms/ipamclaims"));
    CHECK_FALSE(relayAllowed("GET", "/api/v1/namespaces/vms/pods"));
    CHECK_FALSE(relayAllowed("PUT", "/api/v1/namespaces/vms/pods/launcher-a"));
    CHECK_FALSE(relayAllowed("GET", "/api/v1/namespaces/vms/pods/launcher-a/log"));
    CHECK_FALSE(relayAllowed("GET", "/api/v1/namespaces/vms/secrets/x"));
    CHECK_FALSE(relayAllowed("GET", "/api/v1/namespaces/../pods/x"));
    CHECK_FALSE(relayAllowed("PUT", claims + "status"));
}

namespace {

// A relay stand-in that misbehaves: `serve` runs on the accepted connection (or, with
// accept=false, nothing ever accepts: a stopped allot-gc).
class BadRelay {
  public:
    BadRelay(bool accept, std::function<void(int)> serve) {
        if (accept) sock_.acceptOne(10000, std::move(serve));
    }
    const std::string& path() const { return sock_.path(); }

  private:
    RelaySocket sock_{"allot-badrelay"};
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE(
    "a relay that accepts and never answers costs the acknowledgement wait, then the call goes "
    "direct") {
    FakeServer server({{response(201, R"({"kind":"OverlappingRangeIPReservation"})")}});
    // Reads the request, then sits on it until the client is gone.
    BadRelay relay(true, [](int c) {
        char buf[4096];
        while (::recv(c, buf, sizeof buf, 0) > 0) {
        }
    });
    Client::Options o;
    o.relaySocket = relay.path();
    o.requestTimeout = std::chrono::seconds(20);
    auto client = Client::fromConfig(configFor(server.url()), o);
    REQUIRE(client.ok());
    auto body = allot::json::parse(R"({"metadata":{"name":"10.0.0.1"}})");
    auto t0 = std::chrono::steady_clock::now();
    auto made = client->create(kReservations, *body);
    CHECK(made.ok());
    CHECK(secondsSince(t0) < 2.5);
    CHECK(client->relayedCount() == 0);
    CHECK(server.requests().size() == 1);
}

TEST_CASE(
    "a relay that nobody accepts on (a stopped allot-gc) costs at most the acknowledgement wait") {
    FakeServer server({{response(201, R"({"kind":"OverlappingRangeIPReservation"})")}});
    BadRelay relay(false, nullptr);
    Client::Options o;
    o.relaySocket = relay.path();
    o.requestTimeout = std::chrono::seconds(20);
    auto client = Client::fromConfig(configFor(server.url()), o);
    REQUIRE(client.ok());
    auto body = allot::json::parse(R"({"metadata":{"name":"10.0.0.1"}})");
    auto t0 = std::chrono::steady_clock::now();
    CHECK(client->create(kReservations, *body).ok());
    CHECK(secondsSince(t0) < 2.5);
    CHECK(server.requests().size() == 1);
}

TEST_CASE("a relay that closes mid-request sends the call direct at once") {
    FakeServer server({{response(201, R"({"kind":"OverlappingRangeIPReservation"})")}});
    BadRelay relay(true, [](int c) {
        auto frame =
            allot::k8s::readFrame(c, allot::k8s::kMaxRelayFrame,
                                  std::chrono::steady_clock::now() + std::chrono::seconds(5));
        (void)frame;  // and close without a word
    });
    Client::Options o;
    o.relaySocket = relay.path();
    auto client = Client::fromConfig(configFor(server.url()), o);
    REQUIRE(client.ok());
    auto body = allot::json::parse(R"({"metadata":{"name":"10.0.0.1"}})");
    auto t0 = std::chrono::steady_clock::now();
    CHECK(client->create(kReservations, *body).ok());
    CHECK(secondsSince(t0) < 1.0);
    CHECK(server.requests().size() == 1);
}

TEST_CASE("a busy relay that acknowledged is waited for past the acknowledgement wait") {
    FakeServer server({});
    BadRelay relay(true, [](int c) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        auto frame = allot::k8s::readFrame(c, allot::k8s::kMaxRelayFrame, deadline);
        REQUIRE(frame.ok());
        auto req = allot::k8s::decodeRelayRequest(*frame);
        REQUIRE(req.has_value());
        CHECK(req->wantAck);
        using Kind = allot::k8s::RelayResponse::Kind;
        REQUIRE(allot::k8s::writeFrame(
            c, allot::k8s::encodeRelayResponse({Kind::Accepted, 0, -1, ""}), deadline));
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // queued behind a burst
        REQUIRE(allot::k8s::writeFrame(
            c,
            allot::k8s::encodeRelayResponse(
                {Kind::Answered, 201, -1, R"({"kind":"OverlappingRangeIPReservation"})"}),
            deadline));
    });
    Client::Options o;
    o.relaySocket = relay.path();
    o.requestTimeout = std::chrono::seconds(20);
    auto client = Client::fromConfig(configFor(server.url()), o);
    REQUIRE(client.ok());
    auto body = allot::json::parse(R"({"metadata":{"name":"10.0.0.1"}})");
    auto made = client->create(kReservations, *body);
    CHECK(made.ok());
    CHECK(client->relayedCount() == 1);
    CHECK(server.requests().empty());
}
