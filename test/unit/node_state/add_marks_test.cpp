#include "node_state/add_marks.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "../temp_dir.h"

using namespace allot;
using namespace std::chrono_literals;

namespace {
std::chrono::system_clock::time_point now() {
    return std::chrono::system_clock::now();
}
}  // namespace

TEST_CASE("an ADD's mark is there until the runtime's DEL, with its age") {
    test::TempDir dir;
    node_state::FileAddMarks marks(dir.path.string() + "/adds");  // made on first use
    auto none = marks.age("c1", now());
    REQUIRE(none);
    CHECK_FALSE(none->has_value());
    REQUIRE(marks.mark("c1"));
    auto age = marks.age("c1", now() + 10s);
    REQUIRE(age);
    REQUIRE(age->has_value());
    CHECK(**age >= 10s);
    CHECK(**age < 20s);
    marks.unmark("c1");
    CHECK_FALSE(marks.age("c1", now())->has_value());
    marks.unmark("c1");  // again: no error
}

TEST_CASE("an ADD again for the same container starts its mark anew") {
    test::TempDir dir;
    node_state::FileAddMarks marks(dir.path.string());
    REQUIRE(marks.mark("c1"));
    std::this_thread::sleep_for(30ms);
    const auto before = **marks.age("c1", now());
    REQUIRE(marks.mark("c1"));
    CHECK(**marks.age("c1", now()) < before);
}

TEST_CASE("an ID from a pool entry never names a file outside the marks directory") {
    test::TempDir dir;
    node_state::FileAddMarks marks(dir.path.string() + "/adds");
    const std::string hostile = "../../escape";
    REQUIRE(marks.mark(hostile));
    CHECK_FALSE(std::filesystem::exists(dir.path / "escape"));
    CHECK(marks.age(hostile, now())->has_value());
    CHECK_FALSE(marks.age("../../other", now())->has_value());
    const std::string longId(600, 'a');
    REQUIRE(marks.mark(longId));
    CHECK(marks.age(longId, now())->has_value());
}

TEST_CASE("a mark is never written through a symlink") {
    test::TempDir dir;
    const std::string target = dir.path.string() + "/target";
    std::filesystem::create_directory(dir.path / "adds");
    std::filesystem::create_symlink(target, dir.path / "adds" / "c1");
    node_state::FileAddMarks marks(dir.path.string() + "/adds");
    CHECK_FALSE(marks.mark("c1"));
    CHECK_FALSE(std::filesystem::exists(target));
}

TEST_CASE("pruning removes only the marks past the bound") {
    test::TempDir dir;
    node_state::FileAddMarks marks(dir.path.string());
    REQUIRE(marks.mark("old"));
    REQUIRE(marks.mark("new"));
    // Seen from an hour later, both are old; from now, neither is.
    CHECK(marks.prune(1h, now()) == 0);
    CHECK(marks.prune(30min, now() + 1h) == 2);
    CHECK_FALSE(marks.age("old", now())->has_value());
    node_state::FileAddMarks missing(dir.path.string() + "/none");
    CHECK(missing.prune(1s, now()) == 0);
}
