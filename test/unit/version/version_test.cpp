#include "version/version.h"

#include <doctest/doctest.h>

#include <string>

// ALLOT_TEST_VERSION, ALLOT_TEST_REVISION_FROM and ALLOT_TEST_REVISION_OPTION: what
// test/meson.build knows of the build (common/version/meson.build).

TEST_CASE("the version is the build's project version") {
    CHECK(allot::version() == ALLOT_TEST_VERSION);
    CHECK_FALSE(allot::version().empty());
}

TEST_CASE("the revision is the git commit the tree was built from, else the option, else unknown") {
    const std::string from = ALLOT_TEST_REVISION_FROM;
    const std::string rev(allot::revision());
    if (from == "git") {
        // git describe --always: the abbreviated commit, "-dirty" after it for changes not
        // committed; never the fallback.
        const std::string hash = rev.substr(0, rev.find('-'));
        CHECK(hash.size() >= 7);
        CHECK(hash.find_first_not_of("0123456789abcdef") == std::string::npos);
        CHECK((rev == hash || rev == hash + "-dirty"));
    } else if (from == "option") {
        CHECK(rev == ALLOT_TEST_REVISION_OPTION);
    } else {
        CHECK(rev == "unknown");
    }
}

TEST_CASE("a --version line names the program, the version and the revision") {
    CHECK(allot::versionLine("allot-gc") == "allot-gc " + std::string(allot::version()) +
                                                " (revision " + std::string(allot::revision()) +
                                                ")");
}
