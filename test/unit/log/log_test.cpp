#include "log/log.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "json/json.h"

using namespace allot;
using namespace allot::logging;

namespace {

// A logger writing to a fresh file, and the lines it wrote.
struct Captured {
    std::string path;
    Logger log;
    explicit Captured(Layout layout, Format format) : log(layout) {
        char tmpl[] = "/tmp/allot-log-XXXXXX";
        int fd = ::mkstemp(tmpl);
        REQUIRE(fd >= 0);
        ::close(fd);
        path = tmpl;
        REQUIRE(log.open(path));
        log.setFormat(format);
    }
    ~Captured() { ::unlink(path.c_str()); }
    std::vector<std::string> lines() const {
        std::ifstream in(path);
        std::vector<std::string> out;
        for (std::string l; std::getline(in, l);) out.push_back(l);
        return out;
    }
};

// The one line written, as JSON, with its fixed fields checked.
json::Value onlyJsonLine(const Captured& c) {
    auto lines = c.lines();
    REQUIRE(lines.size() == 1);
    auto v = json::parse(lines[0]);
    REQUIRE_MESSAGE(v.ok(), lines[0]);
    REQUIRE(v->isObject());
    for (const char* key : {"time", "level", "msg"}) {
        CAPTURE(key);
        REQUIRE(v->find(key));
        CHECK(v->find(key)->isString());
    }
    return *v;
}

std::string field(const json::Value& v, const char* key) {
    const json::Value* f = v.find(key);
    return f && f->isString() ? f->asString() : "<absent>";
}

const Fields kRelease{.pool = "kube-system/10.0.0.0-24",
                      .network = "blue",
                      .pod = "ns/p1",
                      .container = "c1",
                      .ip = "10.0.0.5"};

}  // namespace

TEST_CASE("a JSON line has time in RFC 3339 UTC with milliseconds, level, msg and its fields") {
    Captured c(Layout::Daemon, Format::Json);
    c.log.info("released 10.0.0.5", kRelease);
    auto v = onlyJsonLine(c);
    CHECK(std::regex_match(field(v, "time"),
                           std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
    CHECK(field(v, "level") == "info");
    CHECK(field(v, "msg") == "released 10.0.0.5");
    CHECK(field(v, "pool") == "kube-system/10.0.0.0-24");
    CHECK(field(v, "network") == "blue");
    CHECK(field(v, "pod") == "ns/p1");
    CHECK(field(v, "container") == "c1");
    CHECK(field(v, "ip") == "10.0.0.5");
}

TEST_CASE("a JSON line omits the fields it does not concern") {
    Captured c(Layout::Daemon, Format::Json);
    c.log.warn("repair pass failed", {.pool = "ns/p"});
    auto v = onlyJsonLine(c);
    CHECK(field(v, "level") == "warn");
    CHECK(field(v, "pool") == "ns/p");
    for (const char* absent : {"network", "pod", "container", "ip"}) {
        CAPTURE(absent);
        CHECK(v.find(absent) == nullptr);
    }
    CHECK(v.members().size() == 4);
}

TEST_CASE("the plugin's JSON lines carry the call's container and pod") {
    Captured c(Layout::PerCall, Format::Json);
    c.log.setContext("ctr-1", "ns/pod-a");
    c.log.info("ADD allocated 10.0.0.5", {.network = "blue", .ip = "10.0.0.5"});
    auto v = onlyJsonLine(c);
    CHECK(field(v, "container") == "ctr-1");
    CHECK(field(v, "pod") == "ns/pod-a");
    CHECK(field(v, "network") == "blue");
    CHECK(field(v, "ip") == "10.0.0.5");
    CHECK(v.find("pool") == nullptr);
}

TEST_CASE("JSON escaping: quotes, backslashes and control characters round-trip exactly") {
    const std::string nasty = std::string("a \"quoted\" \\path\\ tab\tcr\rbell\x07 del\x7f nul") +
                              std::string(1, '\0') + "end";
    Captured c(Layout::Daemon, Format::Json);
    c.log.error(nasty, {.pod = nasty});
    auto v = onlyJsonLine(c);
    CHECK(field(v, "msg") == nasty);
    CHECK(field(v, "pod") == nasty);
    CHECK(field(v, "level") == "error");
}

TEST_CASE("a forged newline cannot start a new line, in either format") {
    const std::string forged = "x\n{\"time\":\"0\",\"level\":\"error\",\"msg\":\"FORGED\"}\nFORGED";
    for (Format f : {Format::Json, Format::Text}) {
        for (Layout l : {Layout::Daemon, Layout::PerCall}) {
            Captured c(l, f);
            c.log.setContext("c\nFORGED", "ns/p");
            c.log.info(forged, {.pool = forged, .ip = "1.2.3.4\nFORGED"});
            auto lines = c.lines();
            REQUIRE(lines.size() == 1);
            CHECK(lines[0].find("FORGED") != std::string::npos);  // written, escaped
            if (f == Format::Json) {
                auto v = json::parse(lines[0]);
                REQUIRE(v.ok());
                CHECK(field(*v, "msg") == forged);
            }
        }
    }
}

TEST_CASE("invalid UTF-8 becomes U+FFFD in JSON; valid multi-byte text is kept") {
    const std::string fffd = "\xef\xbf\xbd";
    struct {
        std::string in, out;
    } cases[] = {
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"a\xff"
         "b",
         "a" + fffd + "b"},
        {"overlong \xc0\xaf", "overlong " + fffd + fffd},
        {"surrogate \xed\xa0\x80", "surrogate " + fffd + fffd + fffd},
        {"past U+10FFFF \xf4\x90\x80\x80", "past U+10FFFF " + fffd + fffd + fffd + fffd},
        {"truncated \xe2\x82", "truncated " + fffd + fffd},
        {"lone continuation \x80", "lone continuation " + fffd},
    };
    for (const auto& t : cases) {
        CAPTURE(t.in);
        Captured c(Layout::Daemon, Format::Json);
        c.log.info(t.in, {.network = t.in});
        auto v = onlyJsonLine(c);
        CHECK(field(v, "msg") == t.out);
        CHECK(field(v, "network") == t.out);
    }
}

TEST_CASE("allot-gc's text lines keep their layout and gain key=value for the fields set") {
    Captured c(Layout::Daemon, Format::Text);
    c.log.info("released 10.0.0.5", kRelease);
    c.log.info("repair pass: 1 pool");
    auto lines = c.lines();
    REQUIRE(lines.size() == 2);
    std::smatch m;
    REQUIRE(std::regex_match(lines[0], m,
                             std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info (.*))")));
    CHECK(m[1] ==
          "released 10.0.0.5 pool=kube-system/10.0.0.0-24 network=blue pod=ns/p1 "
          "container=c1 ip=10.0.0.5");
    CHECK(lines[1].ends_with(" info repair pass: 1 pool"));
}

TEST_CASE("the plugin's text lines keep container and pod up front and add pool, network, ip") {
    Captured c(Layout::PerCall, Format::Text);
    c.log.setContext("ctr-1", "ns/pod-a");
    c.log.info("ADD allocated 10.0.0.5", {.pool = "kube-system/10.0.0.0-24", .ip = "10.0.0.5"});
    c.log.setContext("", "");
    c.log.info("no context");
    auto lines = c.lines();
    REQUIRE(lines.size() == 2);
    CHECK(std::regex_match(
        lines[0], std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ info allot\[\d+\] container=ctr-1 )"
                             R"(pod=ns/pod-a: ADD allocated 10\.0\.0\.5 )"
                             R"(pool=kube-system/10\.0\.0\.0-24 ip=10\.0\.0\.5)")));
    CHECK(lines[1].ends_with(" container=- pod=-: no context"));
}

TEST_CASE("a text value with a space, a quote, '=' or a backslash is quoted and escaped") {
    CHECK(textValue("plain/value-1") == "plain/value-1");
    CHECK(textValue("two words") == "\"two words\"");
    CHECK(textValue("say \"hi\"") == "\"say \\\"hi\\\"\"");
    CHECK(textValue("a=b") == "\"a=b\"");
    CHECK(textValue("back\\slash") == "\"back\\\\slash\"");
    CHECK(textValue("line\nbreak") == "line\\x0abreak");
    Captured c(Layout::Daemon, Format::Text);
    c.log.warn("m", {.pod = "ns/a b"});
    auto lines = c.lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].ends_with(" warn m pod=\"ns/a b\""));
}

TEST_CASE("jsonQuote writes a JSON string literal that parses back to its input") {
    CHECK(jsonQuote("") == "\"\"");
    CHECK(jsonQuote("a\"b\\c\n") == R"("a\"b\\c\n")");
    CHECK(jsonQuote(std::string("\x01", 1)) == R"("\u0001")");
}

TEST_CASE("warning() is written at warn level, named warn, and hidden at error level") {
    Captured c(Layout::Daemon, Format::Json);
    c.log.warning("\"log_level\": \"loud\" is not a level: ignored");
    auto v = onlyJsonLine(c);
    CHECK(field(v, "level") == "warn");
    Captured quiet(Layout::PerCall, Format::Text);
    quiet.log.setLevel(Level::Error);
    quiet.log.warning("hidden");
    quiet.log.error("shown");
    auto lines = quiet.lines();
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find(" error allot[") != std::string::npos);
}

TEST_CASE("levels are named debug, info, warn and error in text lines") {
    Captured c(Layout::Daemon, Format::Text);
    c.log.setLevel(Level::Debug);
    c.log.debug("d");
    c.log.info("i");
    c.log.warn("w");
    c.log.error("e");
    auto lines = c.lines();
    REQUIRE(lines.size() == 4);
    CHECK(lines[0].ends_with("Z debug d"));
    CHECK(lines[1].ends_with("Z info i"));
    CHECK(lines[2].ends_with("Z warn w"));
    CHECK(lines[3].ends_with("Z error e"));
}

TEST_CASE("parseFormat takes text and json only") {
    Format f = Format::Text;
    CHECK(parseFormat("json", f));
    CHECK(f == Format::Json);
    CHECK(parseFormat("text", f));
    CHECK(f == Format::Text);
    f = Format::Json;
    CHECK_FALSE(parseFormat("JSON", f));
    CHECK_FALSE(parseFormat("logfmt", f));
    CHECK(f == Format::Json);
}
