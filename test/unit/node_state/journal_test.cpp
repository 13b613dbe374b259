#include "node_state/journal.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

using namespace allot;

static std::string tempDir() {
    char tmpl[] = "/tmp/allot-journal-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    return tmpl;
}

TEST_CASE("journal entries are written with mode 0600 and read back in order") {
    std::string dir = tempDir() + "/nested/journal";
    node_state::Journal j(dir);
    REQUIRE(j.append({"kube-system", {"10.0.0.0-24"}, "", "ctr-1", "eth0", "ns/a", "n1", {}}).ok());
    REQUIRE(j.append({"kube-system", {"p2"}, "net", "ctr-2", "net1", "ns/b", "n1", {}}).ok());
    auto e = j.entries();
    REQUIRE(e.ok());
    REQUIRE(e->size() == 2);
    CHECK((*e)[0].containerId == "ctr-1");
    CHECK((*e)[1].pools == std::vector<std::string>{"p2"});
    struct stat st {};
    REQUIRE(::stat((*e)[0].file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    REQUIRE(j.remove((*e)[0]).ok());
    CHECK(j.entries()->size() == 1);
}

TEST_CASE("a garbled journal file is reported and left, not fatal") {
    std::string dir = tempDir();
    std::ofstream(dir + "/1-bad.json") << "{not json";
    node_state::Journal j(dir);
    std::vector<std::string> bad;
    auto e = j.entries(&bad);
    REQUIRE(e.ok());
    CHECK(e->empty());
    CHECK(bad.size() == 1);
}

TEST_CASE("a missing journal directory has no entries") {
    node_state::Journal j("/tmp/allot-no-such-dir-for-test/x");
    auto e = j.entries();
    REQUIRE(e.ok());
    CHECK(e->empty());
}

TEST_CASE("a journal file in the format older plugins write is read back") {
    std::string dir = tempDir();
    std::ofstream(dir + "/1700000000000000000-ctr-9-eth0.json")
        << R"({"version":1,"namespace":"kube-system","pools":["10.0.0.0-24","p2"],"networkName":"net",)"
        << R"("containerID":"ctr-9","ifname":"eth0","podref":"ns/p","node":"n1",)"
        << R"("reservations":["10.0.0.5"],"time":1700000000000000000})"
        << "\n";
    node_state::Journal j(dir);
    auto e = j.entries();
    REQUIRE(e.ok());
    REQUIRE(e->size() == 1);
    const auto& r = (*e)[0];
    CHECK(r.poolNamespace == "kube-system");
    CHECK(r.pools == std::vector<std::string>{"10.0.0.0-24", "p2"});
    CHECK(r.networkName == "net");
    CHECK(r.containerId == "ctr-9");
    CHECK(r.ifName == "eth0");
    CHECK(r.podRef == "ns/p");
    CHECK(r.node == "n1");
    CHECK(r.reservations == std::vector<std::string>{"10.0.0.5"});
}

TEST_CASE("a journal entry is written with the keys and order allot-gc of every version reads") {
    std::string dir = tempDir();
    node_state::Journal j(dir);
    REQUIRE(j.record({"ns", {"p"}, "net", "c", "eth0", "ns/a", "n1", {"r1"}}).ok());
    auto e = j.entries();
    REQUIRE(e.ok());
    REQUIRE(e->size() == 1);
    std::ifstream in((*e)[0].file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string head = R"({"version":1,"namespace":"ns","pools":["p"],"networkName":"net",)"
                             R"("containerID":"c","ifname":"eth0","podref":"ns/a","node":"n1",)"
                             R"("reservations":["r1"],"time":)";
    CHECK(text.substr(0, head.size()) == head);
    CHECK(text.back() == '\n');
}
