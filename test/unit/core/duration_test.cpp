#include "core/duration.h"

#include <doctest/doctest.h>

#include <string>

using namespace allot;
using Millis = std::chrono::milliseconds;

TEST_CASE("durations take ms, s, m, h and combinations; 0 alone is zero") {
    CHECK(*core::parseDuration("100ms", "x") == Millis(100));
    CHECK(*core::parseDuration("30s", "x") == Millis(30'000));
    CHECK(*core::parseDuration("5m", "x") == Millis(300'000));
    CHECK(*core::parseDuration("1h", "x") == Millis(3'600'000));
    CHECK(*core::parseDuration("1m30s", "x") == Millis(90'000));
    CHECK(*core::parseDuration("1h2m3s4ms", "x") == Millis(3'723'004));
    CHECK(*core::parseDuration("0", "x") == Millis(0));
    CHECK(*core::parseDuration("0s", "x") == Millis(0));
}

TEST_CASE("anything else is an error naming the flag and the value") {
    for (const char* bad : {"", "5", "30", "5x", "-1s", "1.5s", "s", "ms5", " 5s", "5s ", "1m30",
                            "99999999999999h", "1d"}) {
        auto d = core::parseDuration(bad, "--leak-grace");
        REQUIRE_FALSE(d.ok());
        CHECK(d.code() == core::Errc::InvalidConfig);
        CHECK(d.error().message.find("--leak-grace") != std::string::npos);
        CHECK(d.error().message.find(std::string("\"") + bad + "\"") != std::string::npos);
    }
    CHECK(core::parseDuration("30", "x").error().message.find("needs a unit") != std::string::npos);
}

TEST_CASE("durationIn refuses a value outside its bounds, naming them") {
    CHECK(*core::durationIn("2s", "--x", Millis(1000), Millis(60'000)) == Millis(2000));
    auto low = core::durationIn("500ms", "--x", Millis(1000), Millis(60'000));
    REQUIRE_FALSE(low.ok());
    CHECK(low.error().message.find("between 1s and 60s") != std::string::npos);
    auto high = core::durationIn("2m", "--x", Millis(100), Millis(60'000));
    REQUIRE_FALSE(high.ok());
    CHECK(high.error().message.find("between 100ms and 60s") != std::string::npos);
}
