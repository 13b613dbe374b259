// The plugin as the runtime sees it: the CNI_* environment and stdin in; the result or error
// JSON of the requested CNI version, and the exit code, out. What the verbs do to the pools is
// the engine's (test/unit/engine), the node's lock, queue and cache are test/unit/node's; the
// files the plugin writes on the node are node_files_test.cpp's.
#include "plugin/plugin.h"

#include <doctest/doctest.h>

#include "../temp_dir.h"
#include "plugin_fixture.h"
#include "version/version.h"

using namespace allot;
using namespace allot::plugin;
using engine::Clock;
using test::conf;
using test::errorCode;
using test::firstAddress;
using test::Harness;
using test::kV4;
using test::parsed;
using test::podArgs;

TEST_CASE(
    "an ADD answers the CNI result on stdout for the owner the environment names, and a DEL "
    "answers nothing; both exit 0") {
    Harness h;
    auto a = h.call("ADD", conf(kV4), "ctr1", "net1", podArgs("pod1") + ";K8S_POD_UID=u1");
    REQUIRE(a.exitCode == 0);
    CHECK(
        a.stdoutText ==
        R"({"cniVersion":"1.1.0","ips":[{"address":"10.0.0.2/29","gateway":"10.0.0.1"}],"dns":{}})"
        "\n");
    CHECK(a.stderrText.empty());
    // CNI_CONTAINERID, CNI_ARGS' pod and UID, CNI_IFNAME, the node's name and the network's.
    const core::Owner owner{"ctr1", "ns/pod1", "net1", "node-a", "u1", "net"};
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.at(2) == owner);
    auto d = h.call("DEL", conf(kV4), "ctr1", "net1", podArgs("pod1") + ";K8S_POD_UID=u1");
    CHECK(d.exitCode == 0);
    CHECK(d.stdoutText.empty());
    CHECK(h.mem->getPool("10.0.0.0-29")->allocations.empty());
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
    // The engine's errors too: a store that stays unreachable is 11 (try again later).
    Harness down;
    down.mem->setUnreachable(true);
    auto a = down.call("ADD", conf(R"("range":"10.0.0.0/29","deadline_ms":50)"));
    CHECK(a.exitCode == 11);
    CHECK(errorCode(a) == 11);
    CHECK(parsed(a).find("details")->asString().starts_with("Transient: "));
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

TEST_CASE("an unreadable exclude fails ADD with code 7 but never DEL, as in Whereabouts") {
    Harness h;
    const std::string c = conf(R"("range":"10.0.0.0/29","exclude":["10.0.0.300"])");
    auto a = h.call("ADD", c);
    CHECK(errorCode(a) == 7);
    CHECK(parsed(a).find("msg")->asString().find("exclude[0]") != std::string::npos);
    CHECK(h.call("DEL", c).exitCode == 0);
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

TEST_CASE("DEL with nothing to release succeeds, with or without prevResult or netns") {
    Harness h;
    CHECK(h.call("DEL", conf(kV4)).exitCode == 0);
    CHECK(h.call("DEL", conf(kV4, "1.1.0", R"("prevResult":{"ips":[{"address":"10.0.0.2/29"}]},)"))
              .exitCode == 0);
    EnvMap env{{"CNI_COMMAND", "DEL"}, {"CNI_CONTAINERID", "x"}, {"CNI_IFNAME", "eth0"}};
    CHECK(run(env, conf(kV4), h.deps).exitCode == 0);
}

TEST_CASE(
    "a DEL the store cannot finish is journaled and answers the runtime with success and no "
    "output") {
    Harness h;
    REQUIRE(h.call("ADD", conf(kV4)).exitCode == 0);
    h.mem->setUnreachable(true);
    auto d = h.call("DEL", conf(R"("range":"10.0.0.0/29","gateway":"10.0.0.1","deadline_ms":50)"));
    CHECK(d.exitCode == 0);
    CHECK(d.stdoutText.empty());
    REQUIRE(h.journal.size() == 1);
    CHECK(h.journal[0].containerId == "ctr1");
    CHECK(h.journal[0].pools == std::vector<std::string>{"10.0.0.0-29"});
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

TEST_CASE(
    "CHECK asks for the interface in CNI_NETNS and answers code 102 when it, the allocation or "
    "prevResult's address is missing") {
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

TEST_CASE("STATUS answers code 50 for an exhausted range and for an unreachable store") {
    Harness h;
    const std::string tiny = R"("range":"10.0.0.0/30")";
    CHECK(h.call("STATUS", conf(tiny)).exitCode == 0);
    REQUIRE(h.call("ADD", conf(tiny), "a", "net1", podArgs("a")).exitCode == 0);
    REQUIRE(h.call("ADD", conf(tiny), "b", "net1", podArgs("b")).exitCode == 0);
    auto s = h.call("STATUS", conf(tiny));
    CHECK(errorCode(s) == 50);
    h.mem->setUnreachable(true);
    CHECK(errorCode(h.call("STATUS", conf(kV4))) == 50);
}

TEST_CASE("an outcome carries the engine's counters: pool writes retried, queued ADDs served") {
    Harness h;
    test::TempDir dir;
    h.useNodeFiles(dir.path.string());
    REQUIRE(h.call("ADD", conf(kV4), "first").exitCode == 0);
    h.mem->conflictNext(3);
    auto a = h.call("ADD", conf(kV4), "second", "net1", podArgs("p2"));
    CHECK(a.exitCode == 0);
    CHECK(a.conflicts == 3);
    auto q = node_state::makeFileCommitQueue(dir.path.string());
    engine::CommitRequest r{{"queued", "ns/queued", "net1", "node-a", "", "net"}, std::nullopt, {}};
    r.window = core::IpRange::fromSpec({"10.0.0.0/29", "", "", {}}, "range").value();
    auto t = q->submit("kube-system.10.0.0.0-29", r);
    REQUIRE(t.ok());
    auto b = h.call("ADD", conf(kV4), "third", "net1", podArgs("p3"));
    CHECK(b.exitCode == 0);
    CHECK(b.conflicts == 0);
    CHECK(b.served == 1);
    auto ans = q->answered(**t);
    REQUIRE(ans.has_value());
    CHECK(ans->ok());
}
