// k8s::Client's listEach (paging, one item at a time) and watch (events, bookmarks, Expired,
// garbled or oversized lines) over the loopback FakeServer.
#include <doctest/doctest.h>
#include <malloc.h>

#include <algorithm>
#include <string>
#include <vector>

#include "client_fixture.h"
#include "k8s/client.h"

using allot::core::Errc;
using allot::k8s::Client;
using allot::k8s::WatchEvent;
using allot::k8s::WatchOptions;
using allot::test::clientFor;
using allot::test::FakeServer;
using allot::test::has;
using allot::test::kPods;
using allot::test::response;

namespace {

// The head of a close-delimited streaming response (as a watch is over HTTP/1.1).
std::string streamHead(int status = 200) {
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
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

std::string event(const char* type, const std::string& name, const std::string& rv) {
    return std::string(R"({"type":")") + type + R"(","object":{"kind":"Pod","metadata":{"name":")" +
           name + R"(","resourceVersion":")" + rv + R"("}}})" + "\n";
}

// Bytes malloc has handed out and not taken back, over all arenas.
size_t heapInUse() {
    const struct mallinfo2 mi = ::mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

}  // namespace

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
