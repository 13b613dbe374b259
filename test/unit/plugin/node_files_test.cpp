// What the plugin writes on the node, and where: log_file (its lines and their form), and the
// lock_dir and journal_dir a network config names, honoured only inside the node's roots.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../temp_dir.h"
#include "plugin_fixture.h"

using namespace allot;
using namespace allot::plugin;
using test::conf;
using test::errorCode;
using test::Harness;
using test::kV4;
using test::parsed;

namespace {

// A flat file in `dir` that names `dir` as a node directory, used as the admin's flat file.
void adminNames(Harness& h, const std::string& dir) {
    std::ofstream(dir + "/flat.conf") << R"({"node_dirs":[")" << dir << R"("]})";
    h.deps.flatFiles = {dir + "/flat.conf"};
}

// The call logs through `log`, and `dir` is a node directory the admin names: returns the
// log_file path in it.
std::string logIntoDir(Harness& h, const test::TempDir& dir, logging::Logger& log) {
    adminNames(h, dir.path.string());
    h.deps.log = &log;
    return dir.path.string() + "/allot.log";
}

}  // namespace

TEST_CASE("a control character in a pod name cannot forge a line in the log file") {
    Harness h;
    test::TempDir dir;
    logging::Logger log;
    const std::string file = logIntoDir(h, dir, log);
    auto o = h.call("ADD", conf(kV4 + R"(,"log_file":")" + file + "\""), "c1", "net1",
                    "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p\nFORGED allot[1] container=x pod=y: ADD "
                    "allocated 10.0.0.9");
    CHECK(o.exitCode == 0);
    std::ifstream in(file);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
        ++lines;
        CHECK(line.find("p\\x0aFORGED") != std::string::npos);
    }
    CHECK(lines == 1);
}

TEST_CASE("log_format json: every log_file line is a JSON object; ADD and DEL name the address") {
    Harness h;
    test::TempDir dir;
    logging::Logger log;
    const std::string file = logIntoDir(h, dir, log);
    // log_level "loud" is ignored with a configuration warning: that line is JSON too.
    const std::string c =
        conf(kV4 + R"(,"log_format":"json","log_level":"loud","log_file":")" + file + "\"");
    REQUIRE(h.call("ADD", c, "c1", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p1").exitCode == 0);
    REQUIRE(h.call("DEL", c, "c1", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p1").exitCode == 0);
    std::ifstream in(file);
    std::vector<json::Value> lines;
    for (std::string line; std::getline(in, line);) {
        auto v = json::parse(line);
        REQUIRE_MESSAGE(v.ok(), line);
        REQUIRE_MESSAGE(v->isObject(), line);
        for (const char* key : {"time", "level", "msg", "container", "pod"})
            CHECK_MESSAGE(v->find(key) != nullptr, key << " missing in " << line);
        CHECK(v->find("container")->asString() == "c1");
        CHECK(v->find("pod")->asString() == "ns/p1");
        lines.push_back(*v);
    }
    auto withMsg = [&](const std::string& prefix) -> const json::Value* {
        for (const auto& v : lines)
            if (v.find("msg")->asString().starts_with(prefix)) return &v;
        return nullptr;
    };
    const json::Value* warning = withMsg("\"log_level\"");
    REQUIRE(warning);
    CHECK(warning->find("level")->asString() == "warn");
    for (const char* msg : {"ADD allocated 10.0.0.", "DEL released 10.0.0."}) {
        CAPTURE(msg);
        const json::Value* v = withMsg(msg);
        REQUIRE(v);
        CHECK(v->find("level")->asString() == "info");
        REQUIRE(v->find("ip"));
        CHECK(v->find("msg")->asString().ends_with(v->find("ip")->asString()));
        REQUIRE(v->find("pool"));
        CHECK(v->find("pool")->asString().ends_with("/10.0.0.0-29"));
        REQUIRE(v->find("network"));
        CHECK(v->find("network")->asString() == "net");
    }
}

TEST_CASE("a log_file outside the node's roots is not opened; ADD succeeds and logs to stderr") {
    Harness h;
    test::TempDir dir;
    const std::string root = dir.path.string();
    logging::Logger log;
    h.deps.log = &log;
    std::string file = root + "/allot.log";  // not named by the admin
    auto o = h.call("ADD", conf(kV4 + R"(,"log_file":")" + file + "\""));
    CHECK(o.exitCode == 0);
    CHECK_FALSE(std::filesystem::exists(file));
}

TEST_CASE("a log_file that is a symlink is never written through, and ADD succeeds") {
    Harness h;
    test::TempDir dir;
    const std::string root = dir.path.string();
    logging::Logger log;
    const std::string file = logIntoDir(h, dir, log);
    std::string target = root + "/target";
    std::ofstream(target) << "precious\n";
    std::filesystem::create_symlink(target, file);
    auto o = h.call("ADD", conf(kV4 + R"(,"log_file":")" + file + "\""));
    CHECK(o.exitCode == 0);
    std::ifstream in(target);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(all == "precious\n");
}

TEST_CASE("lock_dir and journal_dir outside the node's roots are refused and create nothing") {
    Harness h;
    test::TempDir dir;
    const std::string root = dir.path.string();
    h.useNodeFiles(root);
    std::string etc = "/etc/allot-itest-" + std::to_string(::getpid());
    for (const std::string key : {"lock_dir", "journal_dir", "relay_socket"}) {
        auto o = h.call("ADD", conf(kV4 + ",\"" + key + "\":\"" + etc + "/x\""));
        CHECK(errorCode(o) == 7);
        CHECK(parsed(o).find("msg")->asString().find(key) != std::string::npos);
        CHECK(parsed(o).find("msg")->asString().find("/run/allot") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(etc));
    }
    // ".." cannot climb out of a root.
    auto o = h.call("ADD", conf(kV4 + R"(,"lock_dir":"/run/allot/../../etc/allot-x")"));
    CHECK(errorCode(o) == 7);
    CHECK_FALSE(std::filesystem::exists("/etc/allot-x"));
}

TEST_CASE("a lock_dir that is world-writable or a symlink is refused; a missing one is made 0700") {
    Harness h;
    test::TempDir dir;
    const std::string root = dir.path.string();
    adminNames(h, root);
    std::string open = root + "/open";
    std::filesystem::create_directory(open);
    ::chmod(open.c_str(), 0777);
    auto o = h.call("ADD", conf(kV4 + R"(,"lock_dir":")" + open + "\""));
    CHECK(errorCode(o) == 7);
    CHECK(parsed(o).find("msg")->asString().find("0777") != std::string::npos);
    std::filesystem::create_directory_symlink("/etc", root + "/link");
    o = h.call("ADD", conf(kV4 + R"(,"lock_dir":")" + root + "/link\""));
    CHECK(errorCode(o) == 7);
    // Missing: the production locker makes it, private.
    h.deps.makeLocker = [](const core::ValidatedConfig& c) {
        return node_state::makeFileLocker(c.raw.lockDir);
    };
    std::string fresh = root + "/a/b/locks";
    o = h.call("ADD", conf(kV4 + R"(,"lock_dir":")" + fresh + "\""));
    CHECK_MESSAGE(o.exitCode == 0, o.stdoutText);
    struct stat st {};
    REQUIRE(::stat(fresh.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("a journal_dir allot-gc does not replay is refused, naming the one it replays") {
    Harness h;
    test::TempDir dir;
    const std::string root = dir.path.string();
    std::ofstream(root + "/flat.conf")
        << R"({"lock_dir":")" << root << R"(/locks","journal_dir":")" << root << R"(/journal"})";
    h.deps.flatFiles = {root + "/flat.conf"};
    auto o = h.call("ADD", conf(kV4 + R"(,"journal_dir":")" + root + "/locks/j\""));
    CHECK(errorCode(o) == 7);
    auto msg = parsed(o).find("msg")->asString();
    CHECK(msg.find("allot-gc replays") != std::string::npos);
    CHECK(msg.find(root + "/journal") != std::string::npos);
    CHECK(h.call("ADD", conf(kV4 + R"(,"journal_dir":")" + root + "/journal\"")).exitCode == 0);
    // DEL is never blocked by it: it releases through allot's own directories.
    CHECK(h.call("DEL", conf(kV4 + R"(,"journal_dir":")" + root + "/locks/j\"")).exitCode == 0);
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.empty());
}
