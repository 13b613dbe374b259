#include "k8s/client.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fake_server.h"

using allot::core::Errc;
using allot::k8s::Client;
using allot::k8s::ClusterConfig;
using allot::k8s::WatchEvent;
using allot::k8s::WatchOptions;

namespace {

using allot::test::FakeServer;
using allot::test::response;

// The head of a close-delimited streaming response (as a watch is over HTTP/1.1).
std::string streamHead(int status = 200) {
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
}

ClusterConfig configFor(const std::string& server) {
    ClusterConfig cfg;
    cfg.server = server;
    cfg.token = "test-token";
    cfg.identity = "user \"tester\" of context \"t\"";
    return cfg;
}

Client clientFor(const FakeServer& server) {
    auto c = Client::fromConfig(configFor(server.url()));
    REQUIRE(c.ok());
    return std::move(*c);
}

bool has(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

auto collectInto(std::vector<std::string>& out) {
    return [&out](const WatchEvent& ev) {
        const auto* md = ev.object.find("metadata");
        const auto* name = md ? md->find("name") : nullptr;
        out.push_back(std::string(allot::k8s::watchEventTypeName(ev.type)) + " " +
                      (name ? name->asString() : ""));
        return true;
    };
}

const std::string kPods = "/api/v1/namespaces/default/pods";

std::string event(const char* type, const std::string& name, const std::string& rv) {
    return std::string(R"({"type":")") + type + R"(","object":{"kind":"Pod","metadata":{"name":")" +
           name + R"(","resourceVersion":")" + rv + R"("}}})" + "\n";
}

}  // namespace

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

TEST_CASE("listEach follows continue tokens one page at a time") {
    FakeServer server(
        {{response(200, R"({"metadata":{"resourceVersion":"500","continue":"tok/1"},)"
                        R"("items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})")},
         {response(
             200,
             R"({"metadata":{"resourceVersion":"500"},"items":[{"metadata":{"name":"c"}}]})")}});
    Client client = clientFor(server);
    allot::k8s::ListOptions opts;
    opts.labelSelector = "app=x";
    opts.resourceVersion = "0";
    opts.limit = 2;
    std::vector<std::string> names;
    auto rv = client.listEach(kPods, opts, [&](allot::json::Value& item) {
        names.push_back(item.find("metadata")->find("name")->asString());
        return true;
    });
    REQUIRE(rv.ok());
    CHECK(*rv == "500");
    CHECK(names == std::vector<std::string>{"a", "b", "c"});
    const auto& reqs = server.requests();
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[0].rfind("GET " + kPods + "?labelSelector=app%3Dx&resourceVersion=0&limit=2 ", 0) ==
          0);
    // The second page carries the token and no resourceVersion (the server rejects both).
    CHECK(reqs[1].rfind("GET " + kPods + "?labelSelector=app%3Dx&limit=2&continue=tok%2F1 ", 0) ==
          0);
}

// Bytes malloc has handed out and not taken back, over all arenas.
size_t heapInUse() {
    const struct mallinfo2 mi = ::mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

TEST_CASE("listEach holds one item of a page as a tree at a time, not the page's whole tree") {
#if defined(__SANITIZE_ADDRESS__)
    MESSAGE("not measured under AddressSanitizer, whose allocator mallinfo2 does not see");
    return;
#endif
    // 100 items of 400 members: 1 MB of JSON, a ~7 MiB tree as a whole.
    std::string page = R"({"metadata":{"resourceVersion":"9"},"items":[)";
    for (int i = 0; i < 100; ++i) {
        page += i ? ",{" : "{";
        for (int k = 0; k < 400; ++k) page += (k ? ",\"" : "\"") + std::to_string(k) + "\":\"x\"";
        page += "}";
    }
    page += "]}";
    FakeServer server({{response(200, page)}});
    Client client = clientFor(server);
    const size_t before = heapInUse();
    size_t peak = 0, items = 0, itemTaps = 0;
    std::vector<allot::json::Tap> taps{{{"399"}, [&](const std::string& key, allot::json::Value&) {
                                            itemTaps += key == "399";
                                            return true;
                                        }}};
    auto rv = client.listEach(
        kPods, {},
        [&](allot::json::Value& item) {
            ++items;
            CHECK(item.find("399") == nullptr);  // the item tap took it
            peak = std::max(peak, heapInUse());
            return true;
        },
        taps);
    REQUIRE(rv.ok());
    CHECK(items == 100);
    CHECK(itemTaps == 100);
    // The response text (at most twice its size as it grew) and one item; not 7 MiB.
    CHECK(peak - before < 3 * page.size());
}

TEST_CASE("a watch delivers events split across writes and returns the last resourceVersion") {
    const std::string e1 = event("ADDED", "a", "11");
    const std::string e2 = event("MODIFIED", "a", "12");
    const std::string bookmark =
        R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"20"}}})"
        "\n";
    FakeServer server({{streamHead(), e1.substr(0, 10), e1.substr(10) + e2.substr(0, 30),
                        e2.substr(30) + bookmark}});
    Client client = clientFor(server);
    std::vector<std::string> seen;
    WatchOptions opts;
    opts.resourceVersion = "10";
    opts.fieldSelector = "spec.nodeName=n1";
    opts.timeoutSeconds = 30;
    auto rv = client.watch(kPods, opts, collectInto(seen));
    REQUIRE(rv.ok());
    CHECK(*rv == "20");
    CHECK(seen == std::vector<std::string>{"ADDED a", "MODIFIED a", "BOOKMARK "});
    const auto& reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].rfind("GET " + kPods +
                            "?watch=true&fieldSelector=spec.nodeName%3Dn1&resourceVersion=10&"
                            "allowWatchBookmarks=true&timeoutSeconds=30 ",
                        0) == 0);
}

TEST_CASE("a watch ERROR event with code 410 is Expired, so the caller relists") {
    FakeServer server({{streamHead(), event("ADDED", "a", "11"),
                        R"js({"type":"ERROR","object":{"kind":"Status","status":"Failure",)js"
                        R"js("message":"too old resource version: 5 (11)","reason":"Expired",)js"
                        R"js("code":410}})js"
                        "\n" +
                            event("ADDED", "never", "12")}});
    Client client = clientFor(server);
    std::vector<std::string> seen;
    auto rv = client.watch(kPods, {}, collectInto(seen));
    REQUIRE_FALSE(rv.ok());
    CHECK(rv.code() == Errc::Expired);
    CHECK(has(rv.error().message, "too old resource version"));
    CHECK(seen == std::vector<std::string>{"ADDED a"});
}

TEST_CASE("an HTTP 410 answer to a watch is Expired") {
    FakeServer server({{response(410, R"({"kind":"Status","reason":"Expired","code":410})")}});
    Client client = clientFor(server);
    std::vector<std::string> seen;
    auto rv = client.watch(kPods, {}, collectInto(seen));
    REQUIRE_FALSE(rv.ok());
    CHECK(rv.code() == Errc::Expired);
    CHECK(seen.empty());
}

TEST_CASE("a garbled line in a watch stream is a Decode error after the good events") {
    FakeServer server({{streamHead(), event("ADDED", "a", "11") + "{\"type\":\"ADD\n"}});
    Client client = clientFor(server);
    std::vector<std::string> seen;
    auto rv = client.watch(kPods, {}, collectInto(seen));
    REQUIRE_FALSE(rv.ok());
    CHECK(rv.code() == Errc::Decode);
    CHECK(seen == std::vector<std::string>{"ADDED a"});
}

TEST_CASE("a watch event over 4 MiB is a Decode error, not unbounded memory") {
    const std::string huge(1u << 20, 'x');
    FakeServer server({{streamHead(), "{\"type\":\"ADDED\",\"object\":{\"pad\":\"" + huge, huge,
                        huge, huge, huge}});
    Client client = clientFor(server);
    std::vector<std::string> seen;
    auto rv = client.watch(kPods, {}, collectInto(seen));
    REQUIRE_FALSE(rv.ok());
    CHECK(rv.code() == Errc::Decode);
    CHECK(has(rv.error().message, "larger than"));
    CHECK(seen.empty());
}

TEST_CASE("returning false from the watch callback ends the watch without an error") {
    FakeServer server({{streamHead(), event("ADDED", "a", "11") + event("ADDED", "b", "12"),
                        event("ADDED", "c", "13")}});
    Client client = clientFor(server);
    int n = 0;
    auto rv = client.watch(kPods, {}, [&](const WatchEvent&) { return ++n < 2; });
    REQUIRE(rv.ok());
    CHECK(*rv == "12");
    CHECK(n == 2);
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

namespace {

// A node relay stand-in on a Unix socket: answers every frame of one connection with `answer`,
// recording the requests.
class FakeRelay {
  public:
    explicit FakeRelay(
        std::function<allot::k8s::RelayResponse(const allot::k8s::RelayRequest&)> answer)
        : answer_(std::move(answer)) {
        char tmpl[] = "/tmp/allot-relay-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        dir_ = tmpl;
        path_ = dir_ + "/api.sock";
        fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, path_.c_str(), path_.size());
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(fd_, 4) == 0);
        thread_ = std::thread([this] {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 5000) != 1) return;
            int c = ::accept(fd_, nullptr, nullptr);
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
            ::close(c);
        });
    }
    ~FakeRelay() {
        ::shutdown(fd_, SHUT_RDWR);
        if (thread_.joinable()) thread_.join();
        ::close(fd_);
        ::unlink(path_.c_str());
        ::rmdir(dir_.c_str());
    }
    const std::string& path() const { return path_; }
    const std::vector<allot::k8s::RelayRequest>& seen() { return seen_; }

  private:
    std::function<allot::k8s::RelayResponse(const allot::k8s::RelayRequest&)> answer_;
    std::string dir_, path_;
    int fd_ = -1;
    std::thread thread_;
    std::vector<allot::k8s::RelayRequest> seen_;
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

// A relay stand-in that misbehaves. Its listening socket is made here; `serve` runs on the
// accepted connection (or, with accept=false, nothing ever accepts: a stopped allot-gc).
class BadRelay {
  public:
    BadRelay(bool accept, std::function<void(int)> serve) {
        char tmpl[] = "/tmp/allot-badrelay-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        dir_ = tmpl;
        path_ = dir_ + "/api.sock";
        fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, path_.c_str(), path_.size());
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(fd_, 4) == 0);
        if (accept)
            thread_ = std::thread([this, serve] {
                pollfd p{fd_, POLLIN, 0};
                if (::poll(&p, 1, 10000) != 1) return;
                int c = ::accept(fd_, nullptr, nullptr);
                if (c < 0) return;
                serve(c);
                ::close(c);
            });
    }
    ~BadRelay() {
        ::shutdown(fd_, SHUT_RDWR);
        if (thread_.joinable()) thread_.join();
        ::close(fd_);
        ::unlink(path_.c_str());
        ::rmdir(dir_.c_str());
    }
    const std::string& path() const { return path_; }

  private:
    std::string dir_, path_;
    int fd_ = -1;
    std::thread thread_;
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
