#include "json/json.h"

#include <doctest/doctest.h>

using namespace allot;

TEST_CASE("JSON parses and dumps keeping big integers exact") {
    auto v =
        json::parse(R"({"a":1,"b":[true,null,"x"],"big":340282366920938463463374607431768211455})");
    REQUIRE(v.ok());
    CHECK(v->find("a")->asInt() == 1);
    CHECK(v->find("big")->asString() == "340282366920938463463374607431768211455");
    CHECK(v->dump() ==
          R"({"a":1,"b":[true,null,"x"],"big":340282366920938463463374607431768211455})");
}

TEST_CASE("malformed JSON is a Decode error with the offset") {
    auto v = json::parse("{\"a\":");
    REQUIRE(!v.ok());
    CHECK(v.code() == core::Errc::Decode);
    CHECK(v.error().message.find("offset") != std::string::npos);
    CHECK(!json::parse("{} trailing").ok());
    CHECK(!json::parse("").ok());
    CHECK(!json::parse("\"\xff\"").ok());
}

TEST_CASE("nesting deeper than the limit is refused, not a crash") {
    std::string deep(100000, '[');
    auto v = json::parse(deep);
    REQUIRE(!v.ok());
    CHECK(v.error().message.find("nested") != std::string::npos);
}

TEST_CASE("the last duplicate key wins, as in Go") {
    auto v = json::parse(R"({"k":1,"k":2})");
    CHECK(v->find("k")->asInt() == 2);
}

TEST_CASE("strings are escaped on output") {
    json::Value o = json::Value::object();
    o.set("m", json::Value::string("a\"b\\c\n"));
    CHECK(o.dump() == R"({"m":"a\"b\\c\n"})");
    CHECK(json::parse(o.dump())->find("m")->asString() == "a\"b\\c\n");
}

TEST_CASE("typed getters name the key on a type mismatch") {
    auto v = json::parse(R"({"s":5})");
    auto s = v->getString("s");
    REQUIRE(!s.ok());
    CHECK(s.error().message.find("\"s\"") != std::string::npos);
    CHECK(!v->getString("missing")->has_value());
}

TEST_CASE("a tapped value is handed over when complete and not kept in the tree") {
    const std::string text =
        R"({"metadata":{"continue":"c"},"items":[{"name":"a","spec":{"e":{"1":{"id":"x"},)"
        R"("2":{"id":"y"}}},"mf":[{"f:1":{}},"a\"b"]},{"name":"b","mf":null}]})";
    std::vector<std::string> seen;
    std::vector<json::Value> measured;
    std::vector<json::Tap> taps{
        {{"items", "[]"},
         [&](const std::string& key, json::Value& item) {
             CHECK(key.empty());
             // Its own taps have taken their parts already.
             seen.push_back(item.find("name")->asString() + " " + item.dump());
             return true;
         }},
        {{"items", "[]", "spec", "e", "*"},
         [&](const std::string& key, json::Value& entry) {
             seen.push_back(key + "=" + entry.find("id")->asString());
             return true;
         }},
        {{"items", "[]", "mf"},
         [&](const std::string&, json::Value& v) {
             measured.push_back(v);
             return true;
         },
         true},
    };
    auto v = json::parse(text, taps);
    REQUIRE(v.ok());
    CHECK(v->dump() == R"({"metadata":{"continue":"c"},"items":[]})");
    CHECK(seen == std::vector<std::string>{"1=x", "2=y", R"(a {"name":"a","spec":{"e":{}}})",
                                           R"(b {"name":"b"})"});
    REQUIRE(measured.size() == 2);
    const std::string mf = R"([{"f:1":{}},"a\"b"])";
    CHECK(measured[0].asInt() == static_cast<int64_t>(mf.size()));
    CHECK(measured[1].isNull());
}

TEST_CASE("a tap that returns false ends the parse; taps do not match the wrong container") {
    int calls = 0;
    std::vector<json::Tap> taps{
        {{"items", "[]"}, [&](const std::string&, json::Value&) { return ++calls < 2; }}};
    auto v = json::parse(R"({"items":[1,2,3,4]})", taps);
    REQUIRE(v.ok());
    CHECK(calls == 2);
    calls = 0;
    auto obj = json::parse(R"({"items":{"a":1}})", taps);  // "[]" is an array's element only
    REQUIRE(obj.ok());
    CHECK(calls == 0);
    CHECK(obj->dump() == R"({"items":{"a":1}})");
    // The nesting limit counts inside a measured value too.
    std::vector<json::Tap> measure{
        {{"a"}, [](const std::string&, json::Value&) { return true; }, true}};
    CHECK_FALSE(json::parse(R"({"a":[[[[1]]]]})", measure, {1024, 4}).ok());
    CHECK(json::parse(R"({"a":[[1]]})", measure, {1024, 4}).ok());
}
