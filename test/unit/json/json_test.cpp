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
