#pragma once
// A JSON object for a test, parsed or the test fails naming the text.

#include <doctest/doctest.h>

#include <string>

#include "json/json.h"

namespace allot::test {

inline json::Value obj(const std::string& text) {
    auto v = json::parse(text);
    REQUIRE_MESSAGE(v.ok(), text);
    return *v;
}

}  // namespace allot::test
