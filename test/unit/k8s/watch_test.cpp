#include "k8s/watch.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using allot::core::Errc;
using allot::k8s::LineSplitter;
using allot::k8s::parseWatchEvent;
using allot::k8s::WatchEvent;

namespace {

struct Collector {
    std::vector<std::string> lines;
    LineSplitter::OnLine fn() {
        return [this](std::string_view l) {
            lines.emplace_back(l);
            return true;
        };
    }
};

const std::string kEvent1 =
    R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"10"}}})";
const std::string kEvent2 =
    R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"b","resourceVersion":"11"}}})";

}  // namespace

TEST_CASE("events split across chunk boundaries are reassembled whole") {
    const std::string stream = kEvent1 + "\n" + kEvent2 + "\n";
    for (size_t chunkSize :
         {size_t{1}, size_t{2}, size_t{7}, kEvent1.size(), kEvent1.size() + 1, stream.size()}) {
        CAPTURE(chunkSize);
        LineSplitter splitter;
        Collector c;
        for (size_t i = 0; i < stream.size(); i += chunkSize) {
            auto r = splitter.feed(std::string_view(stream).substr(i, chunkSize), c.fn());
            REQUIRE(r.ok());
            CHECK(*r);
        }
        REQUIRE(c.lines.size() == 2);
        CHECK(c.lines[0] == kEvent1);
        CHECK(c.lines[1] == kEvent2);
        CHECK(splitter.pendingBytes() == 0);
    }
}

TEST_CASE("blank lines and CRLF line ends between events are tolerated") {
    LineSplitter splitter;
    Collector c;
    REQUIRE(splitter.feed("\n\r\n" + kEvent1 + "\r\n\n" + kEvent2 + "\n", c.fn()).ok());
    REQUIRE(c.lines.size() == 2);
    CHECK(c.lines[0] == kEvent1);
    CHECK(c.lines[1] == kEvent2);
}

TEST_CASE("an unterminated last event is delivered at the end of the stream") {
    LineSplitter splitter;
    Collector c;
    REQUIRE(splitter.feed(kEvent1, c.fn()).ok());
    CHECK(c.lines.empty());
    CHECK(splitter.pendingBytes() == kEvent1.size());
    REQUIRE(splitter.finish(c.fn()).ok());
    REQUIRE(c.lines.size() == 1);
    CHECK(c.lines[0] == kEvent1);
}

TEST_CASE("an event larger than the limit is a Decode error and the splitter stays failed") {
    LineSplitter splitter(64);
    Collector c;
    REQUIRE(splitter.feed(std::string(40, 'x') + "\n", c.fn()).ok());
    CHECK(c.lines.size() == 1);

    // Over the limit in pieces, without a newline ever arriving.
    auto r1 = splitter.feed(std::string(40, 'y'), c.fn());
    REQUIRE(r1.ok());
    auto r2 = splitter.feed(std::string(40, 'y'), c.fn());
    REQUIRE_FALSE(r2.ok());
    CHECK(r2.code() == Errc::Decode);
    CHECK(r2.error().message.find("64") != std::string::npos);
    CHECK(splitter.pendingBytes() == 0);  // the buffered part is released

    auto r3 = splitter.feed("{}\n", c.fn());
    CHECK_FALSE(r3.ok());
    CHECK(c.lines.size() == 1);
}

TEST_CASE("an oversized line inside a single chunk is rejected too") {
    LineSplitter splitter(16);
    Collector c;
    auto r = splitter.feed(std::string(17, 'z') + "\n", c.fn());
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == Errc::Decode);
    CHECK(c.lines.empty());
}

TEST_CASE("the consumer can stop the stream in the middle of a chunk") {
    LineSplitter splitter;
    int seen = 0;
    auto r = splitter.feed(kEvent1 + "\n" + kEvent2 + "\n", [&](std::string_view) {
        ++seen;
        return false;
    });
    REQUIRE(r.ok());
    CHECK_FALSE(*r);
    CHECK(seen == 1);
}

TEST_CASE("watch events decode into their type and object") {
    auto ev = parseWatchEvent(kEvent1);
    REQUIRE(ev.ok());
    CHECK(ev->type == WatchEvent::Type::Added);
    REQUIRE(ev->object.find("metadata") != nullptr);
    CHECK(ev->object.find("metadata")->find("name")->asString() == "a");

    auto bm = parseWatchEvent(
        R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"99"}}})");
    REQUIRE(bm.ok());
    CHECK(bm->type == WatchEvent::Type::Bookmark);

    auto err = parseWatchEvent(
        R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})");
    REQUIRE(err.ok());
    CHECK(err->type == WatchEvent::Type::Error);
    CHECK(err->object.find("code")->asInt() == 410);

    auto mod = parseWatchEvent(R"({"type":"MODIFIED","object":{}})");
    REQUIRE(mod.ok());
    CHECK(mod->type == WatchEvent::Type::Modified);
}

TEST_CASE("garbled watch lines are Decode errors") {
    for (const char* line :
         {"{\"type\":\"ADDED\",\"object\":{", "not json", "[1,2]", R"({"object":{}})",
          R"({"type":"EXPLODED","object":{}})", R"({"type":"ADDED"})",
          R"({"type":"ADDED","object":"x"})", R"({"type":7,"object":{}})"}) {
        CAPTURE(line);
        auto ev = parseWatchEvent(line);
        REQUIRE_FALSE(ev.ok());
        CHECK(ev.code() == Errc::Decode);
    }
}
