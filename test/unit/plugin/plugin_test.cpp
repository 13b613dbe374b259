#include "plugin/plugin.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <numeric>
#include <set>
#include <thread>

#include "../store/store_ref.h"
#include "node/claim_queue.h"
#include "node/file_lock.h"
#include "node/files.h"
#include "node/pool_cache.h"
#include "store/memory_store.h"
#include "store/pool_codec.h"
#include "version/version.h"

using namespace allot;
using namespace allot::plugin;
using namespace allot::node;
using namespace allot::engine;

namespace {

struct MemJournal : ReleaseJournal {
    std::vector<JournalEntry>* out;
    explicit MemJournal(std::vector<JournalEntry>* o) : out(o) {}
    core::Result<void> record(const JournalEntry& e) override {
        out->push_back(e);
        return {};
    }
};

struct Harness {
    std::shared_ptr<store::MemoryStore> mem = std::make_shared<store::MemoryStore>();
    std::vector<JournalEntry> journal;
    std::string node = "node-a";
    std::vector<std::string> checkedNetns;
    bool ifaceOk = true;
    Deps deps;

    Harness() {
        deps.flatFiles = {};
        deps.makeStore = [this](const core::ValidatedConfig&,
                                Clock::time_point) -> core::Result<StoreHandle> {
            return StoreHandle{std::make_unique<test::StoreRef<store::MemoryStore>>(mem),
                               "kube-system"};
        };
        deps.makeJournal = [this](const core::ValidatedConfig&) {
            return std::make_unique<MemJournal>(&journal);
        };
        deps.nodeName = [this](const core::ValidatedConfig&, const cni::NetConf&) { return node; };
        deps.sleep = [](std::chrono::milliseconds) {};
        deps.checkInterface = [this](const std::string& netns, const std::string&,
                                     const std::vector<IpResult>& ips) -> core::Result<void> {
            checkedNetns.push_back(netns);
            if (!ifaceOk)
                return core::makeError(core::Errc::NotFound,
                                       "address " + ips[0].ip.str() + " missing");
            return {};
        };
    }

    Outcome call(const std::string& cmd, const std::string& conf, const std::string& cid = "ctr1",
                 const std::string& ifname = "net1",
                 const std::string& args = "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod1") {
        EnvMap env{
            {"CNI_COMMAND", cmd},   {"CNI_CONTAINERID", cid},     {"CNI_NETNS", "/var/run/netns/t"},
            {"CNI_IFNAME", ifname}, {"CNI_PATH", "/opt/cni/bin"}, {"CNI_ARGS", args}};
        return run(env, conf, deps);
    }
};

std::string conf(const std::string& ipam, const std::string& version = "1.1.0",
                 const std::string& extra = "") {
    return R"({"cniVersion":")" + version + R"(","name":"net","type":"macvlan",)" + extra +
           R"("ipam":{"type":"allot",)" + ipam + "}}";
}

const std::string kV4 = R"("range":"10.0.0.0/29","gateway":"10.0.0.1")";

json::Value parsed(const Outcome& o) {
    auto v = json::parse(o.stdoutText);
    REQUIRE_MESSAGE(v.ok(), o.stdoutText);
    return *v;
}

int errorCode(const Outcome& o) {
    auto v = parsed(o);
    return static_cast<int>(*v.find("code")->asInt());
}

std::string firstAddress(const Outcome& o) {
    auto v = parsed(o);
    return v.find("ips")->items()[0].find("address")->asString();
}

}  // namespace

TEST_CASE("ADD returns the lowest free address with the gateway, and DEL frees it") {
    Harness h;
    auto a = h.call("ADD", conf(kV4));
    REQUIRE(a.exitCode == 0);
    CHECK(
        a.stdoutText ==
        R"({"cniVersion":"1.1.0","ips":[{"address":"10.0.0.2/29","gateway":"10.0.0.1"}],"dns":{}})"
        "\n");
    auto pool = h.mem->getPool("10.0.0.0-29");
    REQUIRE(pool.ok());
    CHECK(pool->allocations.at(2).node == "node-a");
    CHECK(pool->allocations.at(2).podRef == "ns/pod1");
    CHECK(h.mem->getReservation("10.0.0.2").ok());
    auto d = h.call("DEL", conf(kV4));
    CHECK(d.exitCode == 0);
    CHECK(d.stdoutText.empty());
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.empty());
    CHECK(h.mem->getReservation("10.0.0.2").code() == core::Errc::NotFound);
}

TEST_CASE("a repeated ADD for the same container is idempotent") {
    Harness h;
    auto a = h.call("ADD", conf(kV4));
    auto b = h.call("ADD", conf(kV4));
    CHECK(firstAddress(a) == firstAddress(b));
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.size() == 1);
}

constexpr const char* kPodUid1 = "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod1;K8S_POD_UID=u1";

TEST_CASE("a new sandbox of the same pod gets the pod's address") {
    Harness h;
    auto a = h.call("ADD", conf(kV4), "old", "net1", kPodUid1);
    auto b = h.call("ADD", conf(kV4), "new", "net1", kPodUid1);
    CHECK(firstAddress(a) == firstAddress(b));
    CHECK(h.call("DEL", conf(kV4), "old", "net1", kPodUid1).exitCode == 0);
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.size() == 1);
    CHECK(h.mem->getReservation("10.0.0.2").ok());
}

TEST_CASE(
    "a pod re-created under its name with another UID gets another address: the old sandbox may "
    "still hold its own") {
    Harness h;
    auto a = h.call("ADD", conf(kV4), "old", "net1", kPodUid1);
    auto b = h.call("ADD", conf(kV4), "new", "net1",
                    "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod1;K8S_POD_UID=u2");
    REQUIRE(b.exitCode == 0);
    CHECK(firstAddress(a) != firstAddress(b));
    CHECK(h.mem->getReservation("10.0.0.2")->containerId == "old");
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(2).containerId == "old");
}

TEST_CASE(
    "a handover records the new container on the reservation, so the old one's release keeps it") {
    Harness h;
    auto a = h.call("ADD", conf(kV4), "old", "net1", kPodUid1);
    auto b = h.call("ADD", conf(kV4), "new", "net1", kPodUid1);
    REQUIRE(firstAddress(a) == firstAddress(b));
    auto r = h.mem->getReservation("10.0.0.2");
    REQUIRE(r.ok());
    CHECK(r->containerId == "new");
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(2).containerId == "new");
}

TEST_CASE("results follow the requested CNI version") {
    Harness h;
    auto old = h.call("ADD", conf(kV4, "0.2.0"), "c020");
    CHECK(parsed(old).find("ip4") != nullptr);
    auto mid =
        h.call("ADD", conf(kV4, "0.4.0"), "c040", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p040");
    CHECK(parsed(mid).find("ips")->items()[0].find("version")->asString() == "4");
}

TEST_CASE("VERSION echoes the input version") {
    Harness h;
    auto v = run({{"CNI_COMMAND", "VERSION"}}, R"({"cniVersion":"0.4.0"})", h.deps);
    CHECK(v.exitCode == 0);
    CHECK(parsed(v).find("cniVersion")->asString() == "0.4.0");
    CHECK(parsed(v).find("supportedVersions")->items().size() == 7);
}

TEST_CASE(
    "allot --version prints the version and revision on stdout and exits 0, before any CNI "
    "variable is read") {
    const std::string line = "allot " + std::string(allot::version()) + " (revision " +
                             std::string(allot::revision()) + ")\n";
    for (const EnvMap& env : {EnvMap{}, EnvMap{{"CNI_COMMAND", "ADD"}}}) {
        auto a = answerWithoutStdin({"--version"}, env);
        REQUIRE(a);
        CHECK(a->exitCode == 0);
        CHECK(a->stdoutText == line);
        CHECK(a->stderrText.empty());
    }
}

TEST_CASE(
    "a call without CNI_COMMAND says what the plugin is on stderr, as the reference plugins, "
    "and writes nothing on stdout") {
    for (const EnvMap& env : {EnvMap{}, EnvMap{{"CNI_COMMAND", ""}}}) {
        auto a = answerWithoutStdin({}, env);
        REQUIRE(a);
        CHECK(a->exitCode == 0);
        CHECK(a->stdoutText.empty());
        CHECK(a->stderrText == "CNI allot plugin " + std::string(allot::version()) + " (revision " +
                                   std::string(allot::revision()) +
                                   ")\nCNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, "
                                   "0.3.1, 0.4.0, 1.0.0, 1.1.0\n");
    }
}

TEST_CASE("a CNI call is left to run(), and VERSION writes its JSON alone on stdout") {
    CHECK_FALSE(answerWithoutStdin({}, {{"CNI_COMMAND", "VERSION"}}));
    CHECK_FALSE(answerWithoutStdin({"--help"}, {{"CNI_COMMAND", "ADD"}}));
    Harness h;
    auto v = run({{"CNI_COMMAND", "VERSION"}}, R"({"cniVersion":"1.1.0"})", h.deps);
    CHECK(v.exitCode == 0);
    CHECK(v.stderrText.empty());
    CHECK(json::parse(v.stdoutText).ok());
    CHECK(v.stdoutText.find("revision") == std::string::npos);
}

TEST_CASE("errors map to CNI codes and go to stdout as JSON") {
    Harness h;
    CHECK(errorCode(run({{"CNI_COMMAND", "ADD"}}, conf(kV4), h.deps)) == 4);
    auto bad = h.call("ADD", "{not json");
    CHECK(bad.exitCode != 0);
    CHECK(errorCode(bad) == 6);
    // Whereabouts refuses an unreadable range_start in ipRanges (at the top level it drops it).
    auto cfg =
        h.call("ADD", conf(R"("ipRanges":[{"range":"10.0.0.0/24","range_start":"10.1.0.300"}])"));
    CHECK(errorCode(cfg) == 7);
    CHECK(parsed(cfg).find("msg")->asString().find("range_start") != std::string::npos);
    CHECK(errorCode(h.call("ADD", conf(kV4, "9.9.9"))) == 1);
    CHECK(errorCode(h.call("CHECK", conf(kV4, "0.3.1"))) == 1);
    CHECK(errorCode(h.call("GC", conf(kV4, "1.0.0"))) == 1);
    CHECK(errorCode(h.call("STATUS", conf(kV4, "1.0.0"))) == 1);
}

TEST_CASE("a gateway outside the range is returned and never fails the ADD (issue 14)") {
    Harness h;
    auto a = h.call("ADD", conf(R"("range":"10.1.0.64/26","gateway":"10.1.0.1")"));
    REQUIRE(a.exitCode == 0);
    CHECK(
        a.stdoutText ==
        R"({"cniVersion":"1.1.0","ips":[{"address":"10.1.0.65/26","gateway":"10.1.0.1"}],"dns":{}})"
        "\n");
}

TEST_CASE("an unreadable exclude fails ADD with code 7 but never DEL, as in Whereabouts") {
    Harness h;
    const std::string c = conf(R"("range":"10.0.0.0/29","exclude":["10.0.0.300"])");
    auto a = h.call("ADD", c);
    CHECK(errorCode(a) == 7);
    CHECK(parsed(a).find("msg")->asString().find("exclude[0]") != std::string::npos);
    CHECK(h.call("DEL", c).exitCode == 0);
}

TEST_CASE("an exhausted range fails with a clear error and no partial allocation") {
    Harness h;
    for (int i = 0; i < 5; ++i)
        REQUIRE(h.call("ADD", conf(kV4), "c" + std::to_string(i), "net1",
                       "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p" + std::to_string(i))
                    .exitCode == 0);
    auto full = h.call("ADD", conf(kV4), "c9", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p9");
    CHECK(errorCode(full) == kAddressesExhausted);
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.size() == 5);
}

TEST_CASE("multi-range ADD rolls back earlier ranges when a later one is exhausted") {
    Harness h;
    const std::string two = R"("ipRanges":[{"range":"10.1.0.0/24"},{"range":"fd00::/126"}])";
    REQUIRE(h.call("ADD", conf(two), "a", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=a").exitCode ==
            0);
    REQUIRE(h.call("ADD", conf(two), "b", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=b").exitCode ==
            0);
    auto c = h.call("ADD", conf(two), "c", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=c");
    CHECK(errorCode(c) == kAddressesExhausted);
    auto v4 = h.mem->getPool("10.1.0.0-24");
    REQUIRE(v4.ok());
    CHECK(v4->allocations.size() == 2);
    CHECK(!core::findHolder(v4->allocations, "c", "net1"));
    CHECK(h.mem->getReservation("10.1.0.3").code() == core::Errc::NotFound);
}

TEST_CASE("dual-stack ADD returns one address per range") {
    Harness h;
    auto a = h.call("ADD", conf(R"("range":"10.2.0.0/24","ipRanges":[{"range":"fd00:1::/64"}])"));
    auto ips = parsed(a).find("ips")->items();
    REQUIRE(ips.size() == 2);
    CHECK(ips[0].find("address")->asString() == "10.2.0.1/24");
    CHECK(ips[1].find("address")->asString() == "fd00:1::1/64");
}

TEST_CASE("requested IPs come from runtimeConfig, args and CNI_ARGS, args winning") {
    Harness h;
    auto a = h.call("ADD", conf(kV4, "1.1.0", R"("runtimeConfig":{"ips":["10.0.0.5/29"]},)"));
    CHECK(firstAddress(a) == "10.0.0.5/29");
    auto b = h.call("ADD", conf(kV4, "1.1.0", R"("args":{"cni":{"ips":["10.0.0.6"]}},)"), "c2",
                    "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p2;IP=10.0.0.4");
    CHECK(firstAddress(b) == "10.0.0.6/29");
    auto c =
        h.call("ADD", conf(kV4), "c3", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p3;IP=10.0.0.4");
    CHECK(firstAddress(c) == "10.0.0.4/29");
    auto taken =
        h.call("ADD", conf(kV4), "c4", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p4;IP=10.0.0.4");
    CHECK(errorCode(taken) == 7);
    auto outside =
        h.call("ADD", conf(kV4), "c5", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p5;IP=10.9.0.4");
    CHECK(errorCode(outside) == 7);
}

TEST_CASE("GATEWAY= in CNI_ARGS (Whereabouts' key) is the gateway of the static addresses") {
    Harness h;
    const std::string cfg =
        R"("range":"10.0.0.0/29","addresses":[{"address":"10.9.0.5/24"},{"address":"fd00:9::5/64"}])";
    auto a = h.call("ADD", conf(cfg), "c1", "net1",
                    "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p1;GATEWAY=10.9.0.1, 10.0.0.6");
    REQUIRE(a.exitCode == 0);
    auto ips = parsed(a).find("ips")->items();
    REQUIRE(ips.size() == 3);
    CHECK(ips[0].find("gateway") == nullptr);  // a range's address keeps the config's gateway
    CHECK(ips[1].find("address")->asString() == "10.9.0.5/24");
    CHECK(ips[1].find("gateway")->asString() == "10.9.0.1");
    CHECK(ips[2].find("gateway") == nullptr);  // no gateway given in fd00:9::/64
    // Not an address: ADD fails naming it before allocating; DEL is never held up by it.
    auto bad =
        h.call("ADD", conf(cfg), "c2", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p2;GATEWAY=x");
    CHECK(errorCode(bad) == 4);
    CHECK(parsed(bad).find("msg")->asString().find("GATEWAY") != std::string::npos);
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.size() == 1);
    CHECK(h.call("DEL", conf(cfg), "c1", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p1;GATEWAY=x")
              .exitCode == 0);
}

TEST_CASE("DEL with nothing to release succeeds, with or without prevResult or netns") {
    Harness h;
    CHECK(h.call("DEL", conf(kV4)).exitCode == 0);
    CHECK(h.call("DEL", conf(kV4, "1.1.0", R"("prevResult":{"ips":[{"address":"10.0.0.2/29"}]},)"))
              .exitCode == 0);
    EnvMap env{{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "x"}, {"CNI_IFNAME", "eth0"}};
    CHECK(run(env, conf(kV4), h.deps).exitCode == 0);
}

TEST_CASE("DEL journals the release when the store stays unreachable, and succeeds") {
    Harness h;
    REQUIRE(h.call("ADD", conf(kV4)).exitCode == 0);
    h.mem->setUnreachable(true);
    auto d = h.call("DEL", conf(R"("range":"10.0.0.0/29","gateway":"10.0.0.1","deadline_ms":50)"));
    CHECK(d.exitCode == 0);
    REQUIRE(h.journal.size() == 1);
    CHECK(h.journal[0].containerId == "ctr1");
    CHECK(h.journal[0].pools == std::vector<std::string>{"10.0.0.0-29"});
}

TEST_CASE("ADD against an unreachable store fails with code 11 and writes nothing") {
    Harness h;
    h.mem->setUnreachable(true);
    auto a = h.call("ADD", conf(R"("range":"10.0.0.0/29","deadline_ms":50)"));
    CHECK(errorCode(a) == 11);
    h.mem->setUnreachable(false);
    CHECK(h.mem->listPools()->empty());
}

TEST_CASE("conflicting writers are retried until the write lands") {
    Harness h;
    REQUIRE(h.call("ADD", conf(kV4), "first").exitCode == 0);
    h.mem->conflictNext(3);
    auto a = h.call("ADD", conf(kV4), "second", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p2");
    CHECK(a.exitCode == 0);
    CHECK(a.conflicts == 3);
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.size() == 2);
}

TEST_CASE("an address reserved through an overlapping pool is skipped") {
    Harness h;
    REQUIRE(h.mem->createReservation({"10.0.0.2", "other", "ns/other", "eth0", {}}).ok());
    auto a = h.call("ADD", conf(kV4));
    CHECK(firstAddress(a) == "10.0.0.3/29");
    // The first pick, written before its reservation was found taken, was given back.
    auto pool = h.mem->getPool("10.0.0.0-29");
    REQUIRE(pool.ok());
    CHECK(pool->allocations.size() == 1);
    CHECK(pool->allocations.count(3) == 1);
    auto off = h.call("ADD", conf(R"("range":"10.0.0.0/29","enable_overlapping_ranges":false)"),
                      "c2", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p2");
    CHECK(firstAddress(off) == "10.0.0.1/29");
}

TEST_CASE("a pool name collision with another range is an error") {
    Harness h;
    REQUIRE(h.mem->createPool({"10.0.0.0-29", "10.0.0.0/28", {}, {}}).ok());
    auto a = h.call("ADD", conf(kV4));
    CHECK(errorCode(a) == 7);
    CHECK(parsed(a).find("msg")->asString().find("collision") != std::string::npos);
}

TEST_CASE("CHECK passes for a live allocation and fails when it or its address is gone") {
    Harness h;
    auto a = h.call("ADD", conf(kV4, "1.1.0"));
    std::string prev =
        R"("prevResult":{"cniVersion":"1.1.0","ips":[{"address":")" + firstAddress(a) + R"("}]},)";
    CHECK(h.call("CHECK", conf(kV4, "1.1.0", prev)).exitCode == 0);
    CHECK(h.checkedNetns.back() == "/var/run/netns/t");
    h.ifaceOk = false;
    CHECK(errorCode(h.call("CHECK", conf(kV4, "1.1.0", prev))) == kCheckFailed);
    h.ifaceOk = true;
    std::string wrong = R"("prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.0.0.6/29"}]},)";
    CHECK(errorCode(h.call("CHECK", conf(kV4, "1.1.0", wrong))) == kCheckFailed);
    CHECK(errorCode(h.call("CHECK", conf(kV4, "1.1.0", prev), "nobody")) == kCheckFailed);
}

TEST_CASE("GC frees only this node's allocations of this network that are not valid") {
    Harness h;
    REQUIRE(h.call("ADD", conf(kV4), "keep", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=keep")
                .exitCode == 0);
    REQUIRE(h.call("ADD", conf(kV4), "drop", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=drop")
                .exitCode == 0);
    h.node = "node-b";
    REQUIRE(h.call("ADD", conf(kV4), "other", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=other")
                .exitCode == 0);
    h.node = "node-a";
    // An entry without a node (written by Whereabouts) is never touched.
    auto p = *h.mem->getPool("10.0.0.0-29");
    p.allocations[6] = core::Owner{"legacy", "ns/legacy", "net1", "", "", ""};
    REQUIRE(h.mem->updatePool(p).ok());
    auto gc = h.call(
        "GC", conf(kV4, "1.1.0",
                   R"("cni.dev/valid-attachments":[{"containerID":"keep","ifname":"net1"}],)"));
    CHECK(gc.exitCode == 0);
    auto after = h.mem->getPool("10.0.0.0-29")->allocations;
    CHECK(core::findHolder(after, "keep", "net1"));
    CHECK(!core::findHolder(after, "drop", "net1"));
    CHECK(core::findHolder(after, "other", "net1"));
    CHECK(core::findHolder(after, "legacy", "net1"));
}

TEST_CASE("STATUS reports exhaustion and an unreachable store with code 50") {
    Harness h;
    const std::string tiny = R"("range":"10.0.0.0/30")";
    CHECK(h.call("STATUS", conf(tiny)).exitCode == 0);
    h.call("ADD", conf(tiny), "a", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=a");
    h.call("ADD", conf(tiny), "b", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=b");
    auto s = h.call("STATUS", conf(tiny));
    CHECK(errorCode(s) == 50);
    h.mem->setUnreachable(true);
    CHECK(errorCode(h.call("STATUS", conf(kV4))) == 50);
}

const std::string kBlueWait =
    R"("range":"10.5.0.0/16","node_slice_size":"/28","network_name":"blue","deadline_ms":5000)";

TEST_CASE("node-slice mode allocates from this node's slice in a node-named pool") {
    Harness h;
    h.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    auto a = h.call("ADD",
                    conf(R"("range":"10.5.0.0/16","node_slice_size":"/28","network_name":"blue")"));
    CHECK(firstAddress(a) == "10.5.1.1/28");
    CHECK(h.mem->getPool("blue-node-a-10.5.1.0-28").ok());
    h.node = "node-z";
    auto none = h.call(
        "ADD",
        conf(
            R"("range":"10.5.0.0/16","node_slice_size":"/28","network_name":"blue","deadline_ms":20)"),
        "c2");
    CHECK(errorCode(none) == 11);
    CHECK(none.stdoutText.find("NodeSlicePool blue") != std::string::npos);
    CHECK(none.stdoutText.find("node-z") != std::string::npos);
    CHECK(none.stdoutText.find("SliceAwaited") != std::string::npos);
}

TEST_CASE(
    "node-slice mode: an ADD on a node without a slice yet waits for the leader to assign one") {
    Harness h;
    h.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    h.node = "node-z";
    int waits = 0;
    // allot-gc's leader assigns node-z its slice while the ADD waits (its third pause).
    h.deps.sleep = [&](std::chrono::milliseconds d) {
        CHECK(d <= std::chrono::seconds(1));
        if (++waits == 3) h.mem->setNodeSlice("blue", "node-z", "10.5.2.0/28");
    };
    auto a = h.call("ADD", conf(kBlueWait));
    CHECK(waits == 3);
    CHECK(firstAddress(a) == "10.5.2.1/28");
    CHECK(h.mem->getPool("blue-node-z-10.5.2.0-28").ok());
}

namespace {

const std::string kBlue = R"("range":"10.5.0.0/16","node_slice_size":"/28","network_name":"blue")";

// What allot-gc's slice controller does before it takes a slice from a node: seals its pool
// with the NodeSlicePool's resourceVersion then.
void seal(store::MemoryStore& m, const std::string& pool, const std::string& token) {
    auto p = m.getPool(pool);
    REQUIRE(p.ok());
    p->sealed = token;
    REQUIRE(m.updatePool(*p).ok());
}

// node-a held 10.5.1.1 in its slice 10.5.1.0/28 and gave it back; the controller sealed the
// emptied pool (its NodeSlicePool not rewritten yet). Returns the seal's token.
std::string emptiedAndSealed(Harness& h) {
    h.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    REQUIRE(firstAddress(h.call("ADD", conf(kBlue), "c1")) == "10.5.1.1/28");
    REQUIRE(h.call("DEL", conf(kBlue), "c1").exitCode == 0);
    auto slices = h.mem->getNodeSlicePool(h.mem->poolNamespace(), "blue");
    REQUIRE(slices.ok());
    seal(*h.mem, "blue-node-a-10.5.1.0-28", slices->resourceVersion);
    return slices->resourceVersion;
}

}  // namespace

TEST_CASE(
    "node-slice mode: an ADD takes its slice from the relay's copy, reading no NodeSlicePool") {
    Harness h;
    h.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    CHECK(firstAddress(h.call("ADD", conf(kBlue), "c1")) == "10.5.1.1/28");
    CHECK(firstAddress(h.call("ADD", conf(kBlue), "c2", "net1",
                              "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod2")) == "10.5.1.2/28");
    CHECK(h.mem->freshSliceReads() == 0);
}

TEST_CASE("node-slice mode: a stale copy of a taken slice finds its pool sealed and moves on") {
    Harness h;
    const std::string token = emptiedAndSealed(h);
    // The controller then gives node-a another slice; the relay's copy still says the old one.
    h.mem->setNodeSlice("blue", "node-a", "10.5.2.0/28");
    h.mem->setCachedNodeSlice("blue", "node-a", "10.5.1.0/28");
    CHECK(firstAddress(h.call("ADD", conf(kBlue), "c2")) == "10.5.2.1/28");
    auto old = h.mem->getPool("blue-node-a-10.5.1.0-28");
    CHECK(old->allocations.empty());
    CHECK(old->sealed == token);
    CHECK(h.mem->freshSliceReads() >= 1);
}

TEST_CASE("node-slice mode: a sealed pool whose NodeSlicePool is not rewritten yet is code 11") {
    Harness h;
    emptiedAndSealed(h);
    auto r = h.call("ADD", conf(kBlue), "c2");
    CHECK(errorCode(r) == 11);
    CHECK(r.stdoutText.find("sealed") != std::string::npos);
    CHECK(h.mem->getPool("blue-node-a-10.5.1.0-28")->allocations.empty());
}

TEST_CASE("node-slice mode: a slice sealed and then left with its node is claimed in again") {
    Harness h;
    emptiedAndSealed(h);
    // The controller's write lost a race: the NodeSlicePool moved on, the slice stayed node-a's.
    h.mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    CHECK(firstAddress(h.call("ADD", conf(kBlue), "c2")) == "10.5.1.1/28");
    CHECK(h.mem->getPool("blue-node-a-10.5.1.0-28")->sealed.empty());
}

TEST_CASE("node-slice mode, dual-stack: each range's slice comes from its own NodeSlicePool") {
    Harness h;
    h.mem->setNodeSlice("ds", "node-a", "10.6.3.0/24");
    h.mem->setNodeSlice("ds-fd00-6---64", "node-a", "fd00:6::/72");
    auto a = h.call("ADD", conf(R"("ipRanges":[{"range":"10.6.0.0/16"},{"range":"fd00:6::/64"}],)"
                                R"("node_slice_size":"/24","network_name":"ds")"));
    REQUIRE(a.exitCode == 0);
    CHECK(a.stdoutText.find("10.6.3.1/24") != std::string::npos);
    CHECK(a.stdoutText.find("fd00:6::1/72") != std::string::npos);
    CHECK(h.mem->getPool("ds-node-a-fd00-6---72").ok());
}

namespace {

struct ScratchDir {
    std::string path;
    ScratchDir() {
        std::string tmpl = std::filesystem::temp_directory_path().string() + "/allot-queue-XXXXXX";
        REQUIRE(mkdtemp(tmpl.data()) != nullptr);
        path = tmpl;
    }
    ~ScratchDir() { std::filesystem::remove_all(path); }
};

void useNodeFiles(Harness& h, const std::string& dir) {
    h.deps.makeLocker = [dir](const core::ValidatedConfig&) { return makeFileLocker(dir); };
    h.deps.makeQueue = [dir](const core::ValidatedConfig&) { return makeFileClaimQueue(dir); };
}

ClaimRequest request(const std::string& cid) {
    ClaimRequest r{{cid, "ns/" + cid, "net1", "node-a", "", "net"}, std::nullopt, {}};
    r.window = core::IpRange::fromSpec({"10.1.0.0/24", "", "", {}}, "range").value();
    return r;
}

const std::string kBig = R"("range":"10.1.0.0/24")";
const std::string kPoolKey = "kube-system.10.1.0.0-24";

}  // namespace

TEST_CASE("the holder of the node lock commits every queued ADD with one pool write") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    auto q = makeFileClaimQueue(dir.path);
    std::vector<std::unique_ptr<ClaimQueue::Ticket>> waiting;
    for (int i = 0; i < 5; ++i) {
        auto t = q->submit(kPoolKey, request("queued" + std::to_string(i)));
        REQUIRE(t.ok());
        CHECK_FALSE(q->answered(**t).has_value());
        waiting.push_back(std::move(*t));
    }
    int before = h.mem->calls();
    auto a = h.call("ADD", conf(kBig), "leader");
    REQUIRE(a.exitCode == 0);
    CHECK(a.served == 5);
    // Read (create: the pool is new), one write, and the leader's own reservation.
    CHECK(h.mem->calls() - before <= 5);
    auto pool = h.mem->getPool("10.1.0.0-24");
    REQUIRE(pool.ok());
    CHECK(pool->allocations.size() == 6);
    std::set<std::string> ips{firstAddress(a)};
    for (int i = 0; i < 5; ++i) {
        auto ans = q->answered(*waiting[i]);
        REQUIRE(ans.has_value());
        REQUIRE(ans->ok());
        ips.insert((*ans)->ip.str() + "/24");
        auto held = core::findHolder(pool->allocations, "queued" + std::to_string(i), "net1");
        REQUIRE(held.has_value());
        CHECK(*held == (*ans)->offset);
    }
    CHECK(ips.size() == 6);
}

TEST_CASE("a queued request whose process is gone is discarded, not served") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    auto q = makeFileClaimQueue(dir.path);
    auto live = q->submit(kPoolKey, request("alive"));
    REQUIRE(live.ok());
    // A request file nobody holds a lock on: its plugin was killed while waiting.
    std::string qdir = dir.path + "/" + kPoolKey + ".q";
    {
        std::ofstream f(qdir + "/1-dead.req");
        f << R"({"containerId":"dead","podRef":"ns/dead","ifName":"net1","node":"node-a","podUid":"","network":"net","avoid":[]})";
    }
    auto a = h.call("ADD", conf(kBig), "leader");
    REQUIRE(a.exitCode == 0);
    CHECK(a.served == 1);
    CHECK_FALSE(std::filesystem::exists(qdir + "/1-dead.req"));
    auto pool = h.mem->getPool("10.1.0.0-24");
    REQUIRE(pool.ok());
    CHECK_FALSE(core::findHolder(pool->allocations, "dead", "net1").has_value());
    CHECK(core::findHolder(pool->allocations, "alive", "net1").has_value());
    // A served requester that withdraws leaves nothing behind in the queue.
    live->reset();
    CHECK(std::filesystem::is_empty(qdir));
}

TEST_CASE("a queued request that cannot be served gets its own error, the others their addresses") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    auto q = makeFileClaimQueue(dir.path);
    auto bad = request("wants-gateway");
    bad.requested = core::IpAddress::parse("10.1.0.0").value();
    auto t1 = q->submit(kPoolKey, bad);
    auto t2 = q->submit(kPoolKey, request("fine"));
    REQUIRE((t1.ok() && t2.ok()));
    auto a = h.call("ADD", conf(kBig), "leader");
    REQUIRE(a.exitCode == 0);
    auto e = q->answered(**t1);
    REQUIRE(e.has_value());
    REQUIRE_FALSE(e->ok());
    CHECK(e->code() == core::Errc::InvalidConfig);
    CHECK(e->error().message.find("10.1.0.0") != std::string::npos);
    auto ok = q->answered(**t2);
    REQUIRE(ok.has_value());
    CHECK(ok->ok());
}

TEST_CASE("concurrent ADDs through the node lock and claim queue get distinct addresses") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    constexpr int kThreads = 6, kEach = 15;
    std::vector<std::vector<std::string>> got(kThreads);
    std::vector<int> served(kThreads, 0);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
        ts.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i) {
                std::string cid = "c" + std::to_string(t) + "-" + std::to_string(i);
                auto o = h.call("ADD", conf(kBig), cid, "net1",
                                "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=" + cid);
                if (o.exitCode == 0) got[t].push_back(o.stdoutText);
                served[t] += o.served;
            }
        });
    }
    for (auto& t : ts) t.join();
    std::set<std::string> ips;
    size_t ok = 0;
    for (const auto& g : got)
        for (const auto& text : g) {
            ++ok;
            auto v = json::parse(text);
            REQUIRE(v.ok());
            ips.insert(v->find("ips")->items()[0].find("address")->asString());
        }
    CHECK(ok == kThreads * kEach);
    CHECK(ips.size() == ok);
    auto pool = h.mem->getPool("10.1.0.0-24");
    REQUIRE(pool.ok());
    CHECK(pool->allocations.size() == ok);
    MESSAGE("ADDs served by another call's write: " << std::accumulate(served.begin(), served.end(),
                                                                       0));
}

TEST_CASE("a queued release is committed by the holder's write, and DEL goes through the queue") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    auto first = h.call("ADD", conf(kBig), "gone");
    REQUIRE(first.exitCode == 0);
    auto q = makeFileClaimQueue(dir.path);
    auto rel = request("gone");
    rel.release = true;
    auto t = q->submit(kPoolKey, rel);
    REQUIRE(t.ok());
    auto a =
        h.call("ADD", conf(kBig), "leader", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=leader");
    REQUIRE(a.exitCode == 0);
    CHECK(a.served == 1);
    auto ans = q->answered(**t);
    REQUIRE(ans.has_value());
    REQUIRE(ans->ok());
    CHECK((*ans)->ip.str() + "/24" == firstAddress(first));
    auto pool = h.mem->getPool("10.1.0.0-24");
    REQUIRE(pool.ok());
    CHECK_FALSE(core::findHolder(pool->allocations, "gone", "net1").has_value());
    // A DEL of the leader through the queue releases it and its reservation.
    CHECK(h.call("DEL", conf(kBig), "leader", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=leader")
              .exitCode == 0);
    CHECK(h.mem->getPool("10.1.0.0-24")->allocations.empty());
    CHECK(h.mem->listReservations()->size() ==
          1);  // the queued release left "gone"'s to its caller
}

TEST_CASE("a holder whose batch fails answers nobody else: they keep their own chance") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    auto q = makeFileClaimQueue(dir.path);
    auto t = q->submit(kPoolKey, request("waiting"));
    REQUIRE(t.ok());
    h.mem->setUnreachable(true);
    auto a = h.call("ADD", conf(R"("range":"10.1.0.0/24","deadline_ms":3000)"), "leader");
    CHECK(errorCode(a) == 11);
    CHECK_FALSE(q->answered(**t).has_value());
    h.mem->setUnreachable(false);
    // The waiter, trying for itself later, gets an address.
    t->reset();
    CHECK(h.call("ADD", conf(kBig), "waiting").exitCode == 0);
}

namespace {

// Pool writes that land only at `until`: an API server slow to take a big object.
class SlowWrites : public test::StoreRef<store::MemoryStore> {
  public:
    SlowWrites(std::shared_ptr<store::MemoryStore> s, const Clock::time_point& until)
        : StoreRef(std::move(s)), until_(until) {}
    core::Result<store::Pool> updatePool(store::Pool p) override {
        std::this_thread::sleep_until(until_);
        return StoreRef::updatePool(std::move(p));
    }

  private:
    const Clock::time_point& until_;
};

// Reservation creates that fail once the call's deadline has passed, as the Kubernetes client's
// requests do.
class DeadlineStore : public test::StoreRef<store::MemoryStore> {
  public:
    DeadlineStore(std::shared_ptr<store::MemoryStore> s, Clock::time_point deadline)
        : StoreRef(std::move(s)), deadline_(deadline) {}
    void setDeadline(Clock::time_point d) override { deadline_ = d; }
    core::Result<store::Reservation> createReservation(const store::Reservation& r) override {
        if (Clock::now() >= deadline_)
            return core::makeError(core::Errc::Transient, "create reservation: deadline exceeded");
        return StoreRef::createReservation(r);
    }

  private:
    Clock::time_point deadline_;
};

// The node lock; once taken the first time, it is held until the test says go on.
class GatedLocker : public PoolLocker {
  public:
    GatedLocker(std::string dir, std::promise<void>& held, std::shared_future<void> go)
        : inner_(makeFileLocker(std::move(dir))), held_(held), go_(std::move(go)) {}
    core::Result<std::unique_ptr<Guard>> acquire(const std::string& pool,
                                                 Clock::time_point deadline) override {
        auto g = inner_->acquire(pool, deadline);
        if (g && !gated_) {
            gated_ = true;
            held_.set_value();
            go_.wait();
        }
        return g;
    }

  private:
    std::unique_ptr<PoolLocker> inner_;
    std::promise<void>& held_;
    std::shared_future<void> go_;
    bool gated_ = false;
};

// SIGALRM, which ends a wait for the node lock, blocked in this thread and the threads it
// starts while in scope: it must reach the one thread whose wait is meant to end.
struct AlarmBlocked {
    sigset_t old{};
    AlarmBlocked() {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGALRM);
        pthread_sigmask(SIG_BLOCK, &s, &old);
    }
    ~AlarmBlocked() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

void takeAlarms() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
}

// The node lock, and whoever takes it next: when a guard drops the lock, the next holder (another
// plugin process) takes what it finds queued for the pool, as a holder's waiting() does, and
// gives it back.
class NextHolderLocker : public PoolLocker {
  public:
    NextHolderLocker(const std::string& dir, std::vector<std::string>& taken)
        : inner_(makeFileLocker(dir)), queue_(makeFileClaimQueue(dir)), taken_(taken) {}
    core::Result<std::unique_ptr<Guard>> acquire(const std::string& pool,
                                                 Clock::time_point deadline) override {
        auto g = inner_->acquire(pool, deadline);
        if (!g) return g.error();
        return std::unique_ptr<Guard>(new NextHolder(std::move(*g), *queue_, pool, taken_));
    }

  private:
    class NextHolder : public Guard {
      public:
        NextHolder(std::unique_ptr<Guard> g, ClaimQueue& q, std::string pool,
                   std::vector<std::string>& taken)
            : inner_(std::move(g)), queue_(q), pool_(std::move(pool)), taken_(taken) {}
        ~NextHolder() override {
            inner_.reset();
            auto self = queue_.submit(pool_, request("next-holder"));
            CHECK(self.ok());
            if (!self) return;
            std::vector<std::string> ids;
            for (auto& w : queue_.waiting(**self, 10)) {
                taken_.push_back(w.request.owner.containerId);
                ids.push_back(w.id);
            }
            queue_.giveBack(**self, ids);
        }

      private:
        std::unique_ptr<Guard> inner_;
        ClaimQueue& queue_;
        std::string pool_;
        std::vector<std::string>& taken_;
    };
    std::unique_ptr<PoolLocker> inner_;
    std::unique_ptr<ClaimQueue> queue_;
    std::vector<std::string>& taken_;
};

}  // namespace

TEST_CASE("a queued request taken by the holder cannot be withdrawn until it is given back") {
    ScratchDir dir;
    auto q = makeFileClaimQueue(dir.path);
    auto holder = q->submit(kPoolKey, request("holder"));
    auto a = q->submit(kPoolKey, request("a"));
    auto b = q->submit(kPoolKey, request("b"));
    REQUIRE((holder.ok() && a.ok() && b.ok()));
    CHECK(q->withdraw(**b));  // before any holder looked: out of the queue
    auto taken = q->waiting(**holder, 10);
    REQUIRE(taken.size() == 1);
    CHECK(taken[0].request.owner.containerId == "a");
    CHECK_FALSE(q->withdraw(**a));  // its answer is coming
    CHECK(q->waiting(**holder, 10).empty());
    q->giveBack(**holder, {taken[0].id});
    CHECK(q->withdraw(**a));
    CHECK(q->waiting(**holder, 10).empty());
}

TEST_CASE("the next holder of the node lock finds a finished ADD's request gone from the queue") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    std::vector<std::string> taken;
    h.deps.makeLocker = [&](const core::ValidatedConfig&) {
        return std::make_unique<NextHolderLocker>(dir.path, taken);
    };
    auto a = h.call("ADD", conf(kBig), "finished");
    REQUIRE(a.exitCode == 0);
    // Before: the lock dropped while the request was still queued and its process alive, so the
    // next holder served it again (an entry for a container whose ADD may have failed since).
    CHECK_MESSAGE(taken.empty(),
                  "the next holder took the request of " << (taken.empty() ? "" : taken[0]));
    CHECK(h.mem->getPool("10.1.0.0-24")->allocations.size() == 1);
}

TEST_CASE(
    "a queued ADD whose deadline passes while the holder writes its entry gets that entry and its "
    "reservation") {
    ScratchDir dir;
    Harness holder, waiter;
    waiter.mem = holder.mem;
    Clock::time_point writeLands = Clock::now();
    REQUIRE(holder.mem->createPool({"10.1.0.0-24", "10.1.0.0/24", {}, {}}).ok());
    holder.deps.makeStore = [&](const core::ValidatedConfig&,
                                Clock::time_point) -> core::Result<StoreHandle> {
        return StoreHandle{std::make_unique<SlowWrites>(holder.mem, writeLands), "kube-system"};
    };
    std::promise<void> held, go;
    std::shared_future<void> goSignal = go.get_future().share();
    holder.deps.makeLocker = [&](const core::ValidatedConfig&) {
        return std::make_unique<GatedLocker>(dir.path, held, goSignal);
    };
    holder.deps.makeQueue = [&](const core::ValidatedConfig&) {
        return makeFileClaimQueue(dir.path);
    };
    useNodeFiles(waiter, dir.path);
    waiter.deps.makeStore = [&](const core::ValidatedConfig&,
                                Clock::time_point deadline) -> core::Result<StoreHandle> {
        return StoreHandle{std::make_unique<DeadlineStore>(waiter.mem, deadline), "kube-system"};
    };

    AlarmBlocked blocked;
    Outcome h, w;
    std::thread ht([&] { h = holder.call("ADD", conf(kBig), "holder"); });
    held.get_future().wait();
    // Queued behind the holder, with two seconds to go: less than the holder's write takes.
    // The holder's write lands half a second after the waiter's deadline.
    writeLands = Clock::now() + std::chrono::milliseconds(2500);
    std::thread wt([&] {
        takeAlarms();
        w = waiter.call("ADD", conf(R"("range":"10.1.0.0/24","deadline_ms":2000)"), "waiter",
                        "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=waiter");
    });
    const std::string qdir = dir.path + "/" + kPoolKey + ".q";
    auto queued = [&] {  // the holder's own request and the waiter's
        if (!std::filesystem::exists(qdir)) return false;
        int n = 0;
        for (const auto& e : std::filesystem::directory_iterator(qdir))
            n += e.path().extension() == ".req";
        return n == 2;
    };
    for (int i = 0; i < 500 && !queued(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(queued());
    go.set_value();
    ht.join();
    wt.join();

    REQUIRE(h.exitCode == 0);
    auto pool = holder.mem->getPool("10.1.0.0-24");
    REQUIRE(pool.ok());
    const bool entry = core::findHolder(pool->allocations, "waiter", "net1").has_value();
    // Before: the waiter gave up at its deadline (code 11) while the holder wrote its entry,
    // which stayed behind for an ADD that had failed.
    CHECK_MESSAGE(entry == (w.exitCode == 0), "waiter: " << w.stdoutText);
    CHECK_MESSAGE(w.exitCode == 0, w.stdoutText);
    CHECK(pool->allocations.size() == 2);
    CHECK(holder.mem->listReservations()->size() == 2);
}

// A flat file in `dir` that names `dir` as a node directory, used as the admin's flat file.
void adminNames(Harness& h, const std::string& dir) {
    std::ofstream(dir + "/flat.conf") << R"({"node_dirs":[")" << dir << R"("]})";
    h.deps.flatFiles = {dir + "/flat.conf"};
}

// The call logs through `log`, and `dir` is a node directory the admin names: returns the
// log_file path in it.
std::string logIntoDir(Harness& h, const ScratchDir& dir, logging::Logger& log) {
    adminNames(h, dir.path);
    h.deps.log = &log;
    return dir.path + "/allot.log";
}

TEST_CASE("a control character in a pod name cannot forge a line in the log file") {
    Harness h;
    ScratchDir dir;
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
    ScratchDir dir;
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

// ---- issue 21: hardening ------------------------------------------------------------------

namespace {

// Two configs on one pool (same range): disjoint windows, and an exclude on one of them.
const std::string kTeamA =
    R"("range":"10.1.0.0/24","range_start":"10.1.0.10","range_end":"10.1.0.59","exclude":["10.1.0.8/30"])";
const std::string kTeamB =
    R"("range":"10.1.0.0/24","range_start":"10.1.0.100","range_end":"10.1.0.149")";

int lastOctet(const std::string& cidr) {
    auto ip = cidr.substr(0, cidr.find('/'));
    return std::stoi(ip.substr(ip.rfind('.') + 1));
}

}  // namespace

TEST_CASE("concurrent ADDs from two configs sharing a pool each stay inside their own window") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    constexpr int kThreads = 8, kEach = 10;
    std::vector<std::vector<std::pair<bool, std::string>>> got(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
        ts.emplace_back([&, t] {
            const bool a = t % 2 == 0;
            for (int i = 0; i < kEach; ++i) {
                std::string cid = "c" + std::to_string(t) + "-" + std::to_string(i);
                auto o = h.call("ADD", conf(a ? kTeamA : kTeamB), cid, "net1",
                                "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=" + cid);
                if (o.exitCode == 0) got[t].emplace_back(a, firstAddress(o));
            }
        });
    for (auto& t : ts) t.join();
    std::set<std::string> seen;
    size_t n = 0;
    for (const auto& g : got)
        for (const auto& [a, addr] : g) {
            ++n;
            int o = lastOctet(addr);
            if (a) {
                CHECK_MESSAGE((o >= 12 && o <= 59), "team A got " << addr);
            } else {
                CHECK_MESSAGE((o >= 100 && o <= 149), "team B got " << addr);
            }
            seen.insert(addr);
        }
    CHECK(n == kThreads * kEach);
    CHECK(seen.size() == n);
}

TEST_CASE(
    "the holder of the node lock picks a queued request with that request's window and gateway") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    auto q = makeFileClaimQueue(dir.path);
    auto other = request("team-b");
    other.window = core::IpRange::fromSpec(
                       {"10.1.0.0/24", "10.1.0.100", "10.1.0.149", {"10.1.0.100/31"}}, "range")
                       .value();
    other.gateway = core::IpAddress::parse("10.1.0.102").value();
    auto t = q->submit(kPoolKey, other);
    REQUIRE(t.ok());
    auto a = h.call("ADD", conf(kTeamA), "leader");
    REQUIRE(a.exitCode == 0);
    CHECK(a.served == 1);
    CHECK(firstAddress(a) == "10.1.0.12/24");
    auto ans = q->answered(**t);
    REQUIRE(ans.has_value());
    REQUIRE(ans->ok());
    // .100 and .101 excluded, .102 its gateway: the first it may have is .103.
    CHECK((*ans)->ip.str() == "10.1.0.103");
}

TEST_CASE("a queued request without its window is not served by another config's holder") {
    Harness h;
    ScratchDir dir;
    useNodeFiles(h, dir.path);
    auto q = makeFileClaimQueue(dir.path);
    auto old = request("old-binary");
    old.window.reset();  // what a plugin that predates windows leaves in the queue
    auto t = q->submit(kPoolKey, old);
    REQUIRE(t.ok());
    auto a = h.call("ADD", conf(kTeamA), "leader");
    REQUIRE(a.exitCode == 0);
    auto ans = q->answered(**t);
    REQUIRE(ans.has_value());
    CHECK_FALSE(ans->ok());  // answered with an error: it tries for itself
    CHECK_FALSE(core::findHolder(h.mem->getPool("10.1.0.0-24")->allocations, "old-binary", "net1")
                    .has_value());
}

TEST_CASE("the pool cache keeps the same pool name in two namespaces apart") {
    ScratchDir dir;
    auto cache = makeFileCache(dir.path);
    store::Pool p{"10.1.0.0-24", "10.1.0.0/24", {}, "7"};
    p.allocations[5] = core::Owner{"c1", "ns/p", "net1", "node-a", "", "net"};
    cache->save("team-a", p);
    CHECK_FALSE(cache->load("team-b", "10.1.0.0-24").has_value());
    auto back = cache->load("team-a", "10.1.0.0-24");
    REQUIRE(back.has_value());
    CHECK(back->allocations.size() == 1);
    cache->drop("team-b", "10.1.0.0-24");
    CHECK(cache->load("team-a", "10.1.0.0-24").has_value());
}

TEST_CASE("the pool cache keeps a write's text as sent, under the resourceVersion it got") {
    ScratchDir dir;
    auto cache = makeFileCache(dir.path);
    store::Pool p{"10.1.0.0-24", "10.1.0.0/24", {}, "7"};
    p.allocations[5] = core::Owner{"c1", "ns/p", "net1", "node-a", "", "net"};
    p.written = store::encodePool(p, "kube-system").dump();  // sent over version 7
    p.allocations[6] = core::Owner{"not-sent", "ns/q", "net1", "node-a", "", "net"};
    p.resourceVersion = "8";  // the answer's
    p.stored.overhead = 120;
    cache->save("kube-system", p);
    auto back = cache->load("kube-system", "10.1.0.0-24");
    REQUIRE(back.has_value());
    CHECK(back->resourceVersion == "8");
    CHECK(back->allocations.size() == 1);  // the text is what is kept
    CHECK(back->allocations.at(5).containerId == "c1");
    CHECK(back->stored.overhead == 120);
    CHECK(back->written.empty());
    // A file in another form (an older allot's, or damaged) is a miss, never an error.
    const std::string file =
        dir.path + "/" + node::poolFileName("kube-system.10.1.0.0-24") + ".cache";
    for (std::string bad : {p.written, std::string("allot-pool-cache 2 8\n") + p.written,
                            std::string("allot-pool-cache 2 8 x\n") + p.written,
                            std::string("allot-pool-cache 2 8 0\n{")}) {
        std::ofstream(file, std::ios::trunc) << bad;
        CHECK_FALSE(cache->load("kube-system", "10.1.0.0-24").has_value());
    }
}

TEST_CASE(
    "a malformed IP= in CNI_ARGS never fails DEL, and ADD ignores it when args.cni.ips is given") {
    Harness h;
    REQUIRE(h.call("ADD", conf(kV4), "c1").exitCode == 0);
    auto d =
        h.call("DEL", conf(kV4), "c1", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod1;IP=notanip");
    CHECK(d.exitCode == 0);
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.empty());
    auto a = h.call("ADD", conf(kV4, "1.1.0", R"("args":{"cni":{"ips":["10.0.0.6"]}},)"), "c2",
                    "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p2;IP=notanip");
    REQUIRE(a.exitCode == 0);
    CHECK(firstAddress(a) == "10.0.0.6/29");
    CHECK(h.call("CHECK",
                 conf(kV4, "1.1.0", R"("prevResult":{"ips":[{"address":"10.0.0.6/29"}]},)"), "c2",
                 "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p2;IP=notanip")
              .exitCode == 0);
    // Where IP= is the only request, a malformed one is still an error of the environment.
    auto bad =
        h.call("ADD", conf(kV4), "c3", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p3;IP=notanip");
    CHECK(errorCode(bad) == 4);
    CHECK(parsed(bad).find("msg")->asString().find("notanip") != std::string::npos);
}

TEST_CASE("GC with null or no valid-attachments releases this node's entries for the network") {
    for (const std::string top : {R"("cni.dev/valid-attachments":null,)", ""}) {
        Harness h;
        REQUIRE(h.call("ADD", conf(kV4), "c1").exitCode == 0);
        REQUIRE(h.call("ADD", conf(kV4), "c2", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p2")
                    .exitCode == 0);
        h.node = "node-b";
        REQUIRE(h.call("ADD", conf(kV4), "other", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p3")
                    .exitCode == 0);
        h.node = "node-a";
        auto gc = h.call("GC", conf(kV4, "1.1.0", top));
        CHECK_MESSAGE(gc.exitCode == 0, gc.stdoutText);
        auto pool = h.mem->getPool("10.0.0.0-29");
        REQUIRE(pool.ok());
        REQUIRE(pool->allocations.size() == 1);  // node-b's entry stays
        CHECK(pool->allocations.begin()->second.containerId == "other");
    }
}

TEST_CASE("errors carry a longer details text, and NotFound on ADD is not CHECK's code 102") {
    Harness h;
    h.deps.makeStore = [](const core::ValidatedConfig&,
                          Clock::time_point) -> core::Result<StoreHandle> {
        return core::makeError(core::Errc::NotFound,
                               "kubeconfig /etc/nowhere/kubeconfig: no such file");
    };
    auto a = h.call("ADD", conf(kV4));
    CHECK(errorCode(a) != 102);
    CHECK(errorCode(a) == 7);
    auto err = parsed(a);
    const json::Value* details = err.find("details");
    REQUIRE(details != nullptr);
    CHECK(details->asString().find("kubeconfig /etc/nowhere/kubeconfig") != std::string::npos);
    CHECK(details->asString().size() > err.find("msg")->asString().size());
    Harness full;
    for (int i = 0; i < 5; ++i)
        REQUIRE(full.call("ADD", conf(kV4), "c" + std::to_string(i), "net1",
                          "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p" + std::to_string(i))
                    .exitCode == 0);
    auto ex = full.call("ADD", conf(kV4), "c9", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p9");
    CHECK(errorCode(ex) == 100);
    CHECK(parsed(ex).find("details")->asString().find("no free address") != std::string::npos);
}

TEST_CASE("DEL without a usable kubeconfig journals the release and exits 0") {
    Harness h;
    h.deps.makeStore = [](const core::ValidatedConfig&,
                          Clock::time_point) -> core::Result<StoreHandle> {
        return core::makeError(core::Errc::NotFound, "kubeconfig /nowhere: no such file");
    };
    auto d =
        h.call("DEL", conf(R"("range":"10.0.0.0/29","network_name":"blue","namespace":"team-a")"));
    CHECK(d.exitCode == 0);
    REQUIRE(h.journal.size() == 1);
    CHECK(h.journal[0].containerId == "ctr1");
    CHECK(h.journal[0].ifName == "net1");
    CHECK(h.journal[0].poolNamespace == "team-a");
    CHECK(h.journal[0].pools == std::vector<std::string>{"blue-10.0.0.0-29"});
}

TEST_CASE("DEL journals on a 403 or an undecodable pool instead of failing") {
    for (auto code : {core::Errc::Forbidden, core::Errc::Unauthorized, core::Errc::Decode,
                      core::Errc::Invalid}) {
        Harness h;
        REQUIRE(h.call("ADD", conf(kV4)).exitCode == 0);
        h.mem->failNext(100, code);
        auto d = h.call("DEL", conf(kV4));
        CHECK_MESSAGE(d.exitCode == 0, core::errcName(code) << ": " << d.stdoutText);
        CHECK(h.journal.size() == 1);
    }
}

TEST_CASE("a log_file outside the node's roots is not opened; ADD succeeds and logs to stderr") {
    Harness h;
    ScratchDir dir;
    logging::Logger log;
    h.deps.log = &log;
    std::string file = dir.path + "/allot.log";  // not named by the admin
    auto o = h.call("ADD", conf(kV4 + R"(,"log_file":")" + file + "\""));
    CHECK(o.exitCode == 0);
    CHECK_FALSE(std::filesystem::exists(file));
}

TEST_CASE("a log_file that is a symlink is never written through, and ADD succeeds") {
    Harness h;
    ScratchDir dir;
    logging::Logger log;
    const std::string file = logIntoDir(h, dir, log);
    std::string target = dir.path + "/target";
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
    ScratchDir dir;
    useNodeFiles(h, dir.path);
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
    ScratchDir dir;
    adminNames(h, dir.path);
    std::string open = dir.path + "/open";
    std::filesystem::create_directory(open);
    ::chmod(open.c_str(), 0777);
    auto o = h.call("ADD", conf(kV4 + R"(,"lock_dir":")" + open + "\""));
    CHECK(errorCode(o) == 7);
    CHECK(parsed(o).find("msg")->asString().find("0777") != std::string::npos);
    std::filesystem::create_directory_symlink("/etc", dir.path + "/link");
    o = h.call("ADD", conf(kV4 + R"(,"lock_dir":")" + dir.path + "/link\""));
    CHECK(errorCode(o) == 7);
    // Missing: the production locker makes it, private.
    h.deps.makeLocker = [](const core::ValidatedConfig& c) {
        return makeFileLocker(c.raw.lockDir);
    };
    std::string fresh = dir.path + "/a/b/locks";
    o = h.call("ADD", conf(kV4 + R"(,"lock_dir":")" + fresh + "\""));
    CHECK_MESSAGE(o.exitCode == 0, o.stdoutText);
    struct stat st {};
    REQUIRE(::stat(fresh.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("a journal_dir allot-gc does not replay is refused, naming the one it replays") {
    Harness h;
    ScratchDir dir;
    std::ofstream(dir.path + "/flat.conf")
        << R"({"lock_dir":")" << dir.path << R"(/locks","journal_dir":")" << dir.path
        << R"(/journal"})";
    h.deps.flatFiles = {dir.path + "/flat.conf"};
    auto o = h.call("ADD", conf(kV4 + R"(,"journal_dir":")" + dir.path + "/locks/j\""));
    CHECK(errorCode(o) == 7);
    auto msg = parsed(o).find("msg")->asString();
    CHECK(msg.find("allot-gc replays") != std::string::npos);
    CHECK(msg.find(dir.path + "/journal") != std::string::npos);
    CHECK(h.call("ADD", conf(kV4 + R"(,"journal_dir":")" + dir.path + "/journal\"")).exitCode == 0);
    // DEL is never blocked by it: it releases through allot's own directories.
    CHECK(h.call("DEL", conf(kV4 + R"(,"journal_dir":")" + dir.path + "/locks/j\"")).exitCode == 0);
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.empty());
}

TEST_CASE(
    "released_ip_cooldown_s: a freed address goes to the next pod only when nothing else is "
    "free") {
    Harness h;
    const std::string ipam = R"("range":"10.0.0.0/30","released_ip_cooldown_s":600)";
    auto a = h.call("ADD", conf(ipam), "c1", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p1");
    REQUIRE(a.exitCode == 0);
    CHECK(firstAddress(a) == "10.0.0.1/30");
    REQUIRE(h.call("DEL", conf(ipam), "c1").exitCode == 0);
    CHECK(h.mem->getPool("10.0.0.0-30")->released.at.count(1) == 1);
    auto b = h.call("ADD", conf(ipam), "c2", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p2");
    CHECK(firstAddress(b) == "10.0.0.2/30");
    auto c = h.call("ADD", conf(ipam), "c3", "net1", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p3");
    CHECK(firstAddress(c) == "10.0.0.1/30");  // the only one left: the cooldown yields
    CHECK(h.mem->getPool("10.0.0.0-30")->released.at.empty());
}

namespace {

// node_slice_parts 2 of a /28 slice: part 0 holds .1-.7 (the slice's own pool), part 1 .8-.14.
const std::string kParts = kBlue + R"(,"node_slice_parts":2)";
const std::string kPart0 = "blue-node-a-10.5.1.0-28";
const std::string kPart1 = "blue-node-a-10.5.1.0-28-part-1";

std::string podArgs(int i) {
    return "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p" + std::to_string(i);
}

// The parts' tests with this node's files: lock, claim queue and the pool cache the ADD's
// choice of a part reads.
void useNodeCache(Harness& h, const std::string& dir) {
    useNodeFiles(h, dir);
    h.deps.makeCache = [dir](const core::ValidatedConfig&) { return makeFileCache(dir); };
}

// node-a with slice 10.5.1.0/28 of network blue, and this node's files.
struct PartsHarness : Harness {
    ScratchDir dir;
    PartsHarness() {
        useNodeCache(*this, dir.path);
        mem->setNodeSlice("blue", "node-a", "10.5.1.0/28");
    }
};

}  // namespace

TEST_CASE("node_slice_parts: a slice fills its parts in address order, each part one pool") {
    PartsHarness h;
    for (int i = 1; i <= 7; ++i)
        REQUIRE(firstAddress(h.call("ADD", conf(kParts), "c" + std::to_string(i), "net1",
                                    podArgs(i))) == "10.5.1." + std::to_string(i) + "/28");
    CHECK(h.mem->getPool(kPart0)->allocations.size() == 7);
    CHECK(h.mem->getPool(kPart1).code() == core::Errc::NotFound);  // created when first used
    // Part 0 is full: the next address is part 1's first, in part 1's pool (whose range is the
    // whole slice, so offsets mean the same in every part).
    CHECK(firstAddress(h.call("ADD", conf(kParts), "c8", "net1", podArgs(8))) == "10.5.1.8/28");
    auto p1 = h.mem->getPool(kPart1);
    REQUIRE(p1.ok());
    CHECK(p1->range == "10.5.1.0/28");
    CHECK(p1->allocations.count(8) == 1);
    // The same ADD again finds its address in part 1 and writes nothing.
    CHECK(firstAddress(h.call("ADD", conf(kParts), "c8", "net1", podArgs(8))) == "10.5.1.8/28");
    CHECK(h.mem->getPool(kPart1)->allocations.size() == 1);
    // CHECK finds it in its part; DEL frees it there; the lowest free address comes back first.
    const std::string prev =
        R"("prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.5.1.8/28"}]},)";
    CHECK(h.call("CHECK", conf(kParts, "1.1.0", prev), "c8", "net1", podArgs(8)).exitCode == 0);
    CHECK(h.call("DEL", conf(kParts), "c8", "net1", podArgs(8)).exitCode == 0);
    CHECK(h.mem->getPool(kPart1)->allocations.empty());
    CHECK(h.call("DEL", conf(kParts), "c3", "net1", podArgs(3)).exitCode == 0);
    CHECK(firstAddress(h.call("ADD", conf(kParts), "c9", "net1", podArgs(9))) == "10.5.1.3/28");
}

TEST_CASE("node_slice_parts: a requested address is taken in its part; the slice exhausts whole") {
    PartsHarness h;
    const std::string want = R"("runtimeConfig":{"ips":["10.5.1.12/28"]},)";
    CHECK(firstAddress(h.call("ADD", conf(kParts, "1.1.0", want), "r1")) == "10.5.1.12/28");
    CHECK(h.mem->getPool(kPart1)->allocations.count(12) == 1);
    CHECK(h.call("STATUS", conf(kParts)).exitCode == 0);
    for (int i = 1; i <= 13; ++i)
        REQUIRE(h.call("ADD", conf(kParts), "f" + std::to_string(i), "net1", podArgs(i)).exitCode ==
                0);
    auto full = h.call("ADD", conf(kParts), "f14", "net1", podArgs(14));
    CHECK(errorCode(full) == 100);
    CHECK(errorCode(h.call("STATUS", conf(kParts))) == 50);
}

TEST_CASE("node_slice_parts: an ADD again finds its address in its part; DEL frees every copy") {
    PartsHarness h;
    for (int i = 1; i <= 8; ++i)
        REQUIRE(h.call("ADD", conf(kParts), "c" + std::to_string(i), "net1", podArgs(i)).exitCode ==
                0);
    REQUIRE(h.call("DEL", conf(kParts), "c3", "net1", podArgs(3)).exitCode == 0);
    // Part 0 has room again; c8's address is in part 1, which this node's copy shows.
    CHECK(firstAddress(h.call("ADD", conf(kParts), "c8", "net1", podArgs(8))) == "10.5.1.8/28");
    CHECK(h.mem->getPool(kPart0)->allocations.size() == 6);
    // Part 1's copy gone (its last write here failed): the same ADD again may take a second
    // address in part 0, and the DEL of the container frees both.
    for (const auto& e : std::filesystem::directory_iterator(h.dir.path))
        if (e.path().string().find("part-1.cache") != std::string::npos)
            std::filesystem::remove(e.path());
    REQUIRE(h.call("ADD", conf(kParts), "c8", "net1", podArgs(8)).exitCode == 0);
    CHECK(h.call("DEL", conf(kParts), "c8", "net1", podArgs(8)).exitCode == 0);
    CHECK(h.mem->getPool(kPart1)->allocations.empty());
    CHECK(h.mem->getPool(kPart0)->allocations.size() == 6);
}

TEST_CASE(
    "node_slice_parts: on a network the slice controller refuses parts on, ADD fails with code 7 "
    "naming the network and the NADs; CHECK, DEL and one-pool ADDs go on") {
    PartsHarness h;
    for (int i = 1; i <= 8; ++i)
        REQUIRE(h.call("ADD", conf(kParts), "c" + std::to_string(i), "net1", podArgs(i)).exitCode ==
                0);
    REQUIRE(h.mem->getPool(kPart1)->allocations.count(8) == 1);
    h.mem->setNodeSlicePartsRefused(
        "blue",
        "every NAD of the network must ask for node_slice_parts 2 and keep "
        "enable_overlapping_ranges: NetworkAttachmentDefinition apps/wa (whereabouts) asks for "
        "node_slice_parts 1 (Whereabouts reads only part 0)");
    REQUIRE(h.call("DEL", conf(kParts), "c3", "net1", podArgs(3)).exitCode == 0);
    auto refused = h.call("ADD", conf(kParts), "c9", "net1", podArgs(9));
    REQUIRE_MESSAGE(refused.exitCode != 0, "ADD with parts succeeded: " << refused.stdoutText);
    CHECK(errorCode(refused) == 7);
    const std::string msg = parsed(refused).find("msg")->asString();
    CHECK_MESSAGE(msg.find("network blue") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("apps/wa (whereabouts)") != std::string::npos, msg);
    CHECK(h.mem->getPool(kPart0)->allocations.size() == 6);  // nothing written
    // The same ADD again of a pod that holds an address is refused too.
    CHECK(errorCode(h.call("ADD", conf(kParts), "c8", "net1", podArgs(8))) == 7);
    // What the parts hold stays reachable: CHECK finds c8 in part 1, DEL frees it there.
    const std::string prev =
        R"("prevResult":{"cniVersion":"1.1.0","ips":[{"address":"10.5.1.8/28"}]},)";
    CHECK(h.call("CHECK", conf(kParts, "1.1.0", prev), "c8", "net1", podArgs(8)).exitCode == 0);
    CHECK(h.call("DEL", conf(kParts), "c8", "net1", podArgs(8)).exitCode == 0);
    CHECK(h.mem->getPool(kPart1)->allocations.empty());
    // A config of the network without parts reads only part 0, as Whereabouts: it works.
    CHECK(firstAddress(h.call("ADD", conf(kBlue), "c10", "net1", podArgs(10))) == "10.5.1.3/28");
}

TEST_CASE("node_slice_parts: an ADD goes past a part the slice controller sealed") {
    PartsHarness h;
    REQUIRE(firstAddress(h.call("ADD", conf(kParts), "c1")) == "10.5.1.1/28");
    REQUIRE(h.call("DEL", conf(kParts), "c1").exitCode == 0);
    seal(*h.mem, kPart0, "1");  // the NodeSlicePool not rewritten since
    CHECK(firstAddress(h.call("ADD", conf(kParts), "c2")) == "10.5.1.8/28");
    CHECK(h.mem->getPool(kPart0)->allocations.empty());
}
