#include "gc-sidecar/daemon/config.h"

#include <doctest/doctest.h>

#include <map>

using namespace allot;
using gc::Millis;
using namespace std::chrono_literals;

namespace {

gc::GetEnv envOf(std::map<std::string, std::string> m) {
    return [m](const std::string& k) -> std::optional<std::string> {
        auto it = m.find(k);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
}

core::Result<gc::ParsedArgs> parse(std::vector<std::string> args,
                                   std::map<std::string, std::string> env = {}) {
    return gc::parseArgs(args, envOf(std::move(env)));
}

bool has(const std::string& s, const std::string& sub) {
    return s.find(sub) != std::string::npos;
}

}  // namespace

TEST_CASE("defaults apply when only the node name is given") {
    auto p = parse({"--node-name=n1"});
    REQUIRE(p.ok());
    const auto& c = p->config;
    CHECK(c.nodeName == "n1");
    CHECK(c.identity == "n1");
    CHECK(c.poolNamespace == "kube-system");
    CHECK(c.kubeconfig.empty());
    CHECK(c.ipamTypes == std::vector<std::string>{"allot", "whereabouts"});
    CHECK(c.role == gc::Role::Agent);
    CHECK(c.repairInterval == 60s);
    CHECK(c.leakGrace == 5min);
    CHECK(c.leakPasses == 3);
    CHECK(c.listenHost == "127.0.0.1");
    CHECK(c.listenPort == 9847);
    CHECK(c.journalDir == "/var/lib/allot/journal");
    CHECK(c.nodeKubeconfig.empty());
    CHECK(c.leaseName == "allot-gc");
    CHECK(c.leaseNamespace == "kube-system");
}

TEST_CASE("the node name is required, from the flag or NODE_NAME") {
    auto none = parse({});
    REQUIRE_FALSE(none.ok());
    CHECK(has(none.error().message, "NODE_NAME"));
    auto env = parse({}, {{"NODE_NAME", "worker-3"}});
    REQUIRE(env.ok());
    CHECK(env->config.nodeName == "worker-3");
    CHECK(parse({"--node-name", "Not_A_Name"}).code() == core::Errc::InvalidConfig);
}

TEST_CASE("flags win over environment variables, which win over defaults") {
    auto p =
        parse({"--repair-interval=2s", "--namespace", "pools"}, {{"NODE_NAME", "n1"},
                                                                 {"ALLOT_GC_REPAIR_INTERVAL", "9s"},
                                                                 {"ALLOT_GC_LEAK_PASSES", "5"},
                                                                 {"KUBECONFIG", "/k"},
                                                                 {"ALLOT_GC_NAMESPACE", "other"},
                                                                 {"POD_NAME", "allot-abcde"}});
    REQUIRE(p.ok());
    CHECK(p->config.repairInterval == 2s);
    CHECK(p->config.leakPasses == 5);
    CHECK(p->config.kubeconfig == "/k");
    CHECK(p->config.poolNamespace == "pools");
    CHECK(p->config.identity == "allot-abcde");
}

TEST_CASE("bad values are clear errors naming the flag or variable") {
    struct Case {
        std::vector<std::string> args;
        std::map<std::string, std::string> env;
        const char* names;
    } cases[] = {
        {{"--node-name=n", "--leak-passes=0"}, {}, "--leak-passes"},
        {{"--node-name=n", "--leak-passes=abc"}, {}, "--leak-passes"},
        {{"--node-name=n", "--repair-interval=10"}, {}, "--repair-interval"},
        {{"--node-name=n", "--repair-interval=10ms"}, {}, "--repair-interval"},
        {{"--node-name=n", "--listen=localhost"}, {}, "--listen"},
        {{"--node-name=n", "--listen=:70000"}, {}, "--listen"},
        {{"--node-name=n", "--ipam-types=allot,,x"}, {}, "--ipam-types"},
        {{"--node-name=n", "--plugin-aliases=../macvlan"}, {}, "--plugin-aliases"},
        {{"--node-name=n", "--plugin-aliases=whereabouts,allot"}, {}, "--plugin-aliases"},
        {{"--node-name=n"}, {{"ALLOT_GC_PLUGIN_ALIASES", "a,,b"}}, "ALLOT_GC_PLUGIN_ALIASES"},
        {{"--node-name=n", "--role=leader"}, {}, "--role"},
        {{"--node-name=n"}, {{"ALLOT_GC_ROLE", "both"}}, "ALLOT_GC_ROLE"},
        {{"--node-name=n", "--repair=false"}, {}, "--repair"},  // gone: --role says it
        {{"--node-name=n", "--log-level=loud"}, {}, "--log-level"},
        {{"--node-name=n", "--log-format=logfmt"}, {}, "--log-format"},
        {{"--node-name=n"}, {{"ALLOT_GC_LOG_FORMAT", "JSON"}}, "ALLOT_GC_LOG_FORMAT"},
        {{"--node-name=n"}, {{"ALLOT_GC_LEAK_GRACE", "soon"}}, "ALLOT_GC_LEAK_GRACE"},
        {{"--node-name=n", "--frobnicate=1"}, {}, "--frobnicate"},
        {{"--node-name=n", "stray"}, {}, "stray"},
        {{"--node-name=n", "--leak-grace"}, {}, "--leak-grace"},
        {{"--node-name=n", "--lease-duration=4s", "--lease-renew-interval=3s"},
         {},
         "--lease-renew-interval"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.names);
        auto p = parse(c.args, c.env);
        REQUIRE_FALSE(p.ok());
        CHECK(p.code() == core::Errc::InvalidConfig);
        CHECK(has(p.error().message, c.names));
    }
}

TEST_CASE("listen addresses: host:port, [v6]:port, :port; port 0 turns the server off") {
    auto a = gc::parseListen("0.0.0.0:9847", "x");
    REQUIRE(a.ok());
    CHECK(a->first == "0.0.0.0");
    CHECK(a->second == 9847);
    auto b = gc::parseListen("[::1]:80", "x");
    REQUIRE(b.ok());
    CHECK(b->first == "::1");
    auto c = gc::parseListen(":9000", "x");
    REQUIRE(c.ok());
    CHECK(c->first == "0.0.0.0");
    CHECK(gc::parseListen("127.0.0.1:0", "x")->second == 0);
    CHECK_FALSE(gc::parseListen("::1:80", "x").ok());
}

TEST_CASE("ipam types are a trimmed comma-separated list; the role is agent or controller") {
    auto p = parse({"--node-name=n", "--ipam-types= allot , mine", "--role=controller"});
    REQUIRE(p.ok());
    CHECK(p->config.ipamTypes == std::vector<std::string>{"allot", "mine"});
    CHECK(p->config.role == gc::Role::Controller);
    auto q = parse({"--node-name=n"}, {{"ALLOT_GC_ROLE", "controller"}});
    REQUIRE(q.ok());
    CHECK(q->config.role == gc::Role::Controller);
    auto r = parse({"--node-name=n", "--role", "agent"}, {{"ALLOT_GC_ROLE", "controller"}});
    REQUIRE(r.ok());
    CHECK(r->config.role == gc::Role::Agent);
}

TEST_CASE("plugin aliases: none by default, a trimmed list of file names from flag or variable") {
    CHECK(parse({"--node-name=n"})->config.pluginAliases.empty());
    CHECK(parse({"--node-name=n", "--plugin-aliases="})->config.pluginAliases.empty());
    auto p = parse({"--node-name=n"}, {{"ALLOT_GC_PLUGIN_ALIASES", " whereabouts , wb-2.0_x "}});
    REQUIRE(p.ok());
    CHECK(p->config.pluginAliases == std::vector<std::string>{"whereabouts", "wb-2.0_x"});
}

TEST_CASE("--log-format is text by default, json from the flag or ALLOT_GC_LOG_FORMAT") {
    CHECK(parse({"--node-name=n"})->config.logFormat == "text");
    CHECK(parse({"--node-name=n", "--log-format=json"})->config.logFormat == "json");
    CHECK(parse({"--node-name=n"}, {{"ALLOT_GC_LOG_FORMAT", "json"}})->config.logFormat == "json");
    CHECK(parse({"--node-name=n", "--log-format=text"}, {{"ALLOT_GC_LOG_FORMAT", "json"}})
              ->config.logFormat == "text");
    const std::string u = gc::usage();
    CHECK(has(u, "--log-format"));
    CHECK(has(u, "ALLOT_GC_LOG_FORMAT"));
}

TEST_CASE("--help wins and the usage documents every flag with its variable") {
    auto p = parse({"--leak-passes=zero", "--help"});
    // --help is seen before the bad value only when it comes first; either way it is documented.
    auto h = parse({"--help"});
    REQUIRE(h.ok());
    CHECK(h->help);
    const std::string u = gc::usage();
    for (const char* f : {"--node-name", "NODE_NAME", "--namespace", "--kubeconfig", "KUBECONFIG",
                          "--ipam-types", "--repair-interval", "--leak-grace", "--leak-passes",
                          "--listen", "--journal-dir", "--node-kubeconfig", "--lease-name",
                          "--lease-namespace", "--watch-timeout", "--health-threshold"})
        CHECK_MESSAGE(has(u, f), f);
    (void)p;
}

TEST_CASE("--help's defaults are the Config's own: each flag shows what Config{} holds") {
    const std::string u = gc::usage();
    // One line per flag: "  --NAME=ARG  [$ENV] (default X)".
    auto defaultOf = [&](const std::string& flag) {
        auto at = u.find("  --" + flag + "=");
        REQUIRE_MESSAGE(at != std::string::npos, flag);
        auto open = u.find("(default ", at);
        auto close = u.find(")\n", open);
        return u.substr(open + 9, close - open - 9);
    };
    const gc::Config c;
    CHECK(defaultOf("leak-grace") == "5m");
    CHECK(defaultOf("repair-interval") == "60s");
    CHECK(defaultOf("add-in-flight-bound") == "150s");
    CHECK(defaultOf("lease-renew-interval") == "5s");
    CHECK(defaultOf("leak-passes") == std::to_string(c.leakPasses));
    CHECK(defaultOf("namespace") == c.poolNamespace);
    CHECK(defaultOf("ipam-types") == "allot,whereabouts");
    CHECK(defaultOf("listen") == c.listenHost + ":" + std::to_string(c.listenPort));
    CHECK(defaultOf("sandbox-probe") == "true");
    CHECK(defaultOf("journal-dir") == c.journalDir);
    CHECK(defaultOf("relay-socket") == "none (off)");
    CHECK(defaultOf("node-name") == "none (required)");
    // No help text repeats a default by hand.
    size_t n = 0;
    for (size_t p = u.find("(default"); p != std::string::npos; p = u.find("(default", p + 1)) ++n;
    size_t flags = 0;
    for (size_t p = u.find("[$"); p != std::string::npos; p = u.find("[$", p + 1)) ++flags;
    CHECK(n == flags);
}

TEST_CASE("--version asks for the version alone: no node name needed, nothing else parsed") {
    auto v = parse({"--version"});
    REQUIRE(v.ok());
    CHECK(v->version);
    CHECK_FALSE(v->help);
    auto first = parse({"--version", "--leak-passes=zero"});
    REQUIRE(first.ok());
    CHECK(first->version);
    auto plain = parse({"--node-name=n"});
    REQUIRE(plain.ok());
    CHECK_FALSE(plain->version);
    CHECK(has(gc::usage(), "--version"));
}

TEST_CASE("an empty variable counts as unset, except an empty journal dir turns replay off") {
    auto p =
        parse({}, {{"NODE_NAME", "n"}, {"ALLOT_GC_NAMESPACE", ""}, {"ALLOT_GC_JOURNAL_DIR", ""}});
    REQUIRE(p.ok());
    CHECK(p->config.poolNamespace == "kube-system");
    CHECK(p->config.journalDir.empty());
}

TEST_CASE("--pod-uid comes from the flag or POD_UID; none by default, and a non-UID is refused") {
    CHECK(parse({"--node-name=n"})->config.podUid.empty());
    const std::string uid = "6f1c2f0e-7d3a-4c7e-9a51-0d5f6c1e2b3a";
    CHECK(parse({"--node-name=n", "--pod-uid=" + uid})->config.podUid == uid);
    CHECK(parse({"--node-name=n"}, {{"POD_UID", uid}})->config.podUid == uid);
    CHECK(parse({"--node-name=n"}, {{"POD_UID", ""}})->config.podUid.empty());
    // Unset in the pod, the kubelet passes "$(POD_UID)" as written.
    for (const char* bad : {"$(POD_UID)", "", "a b", "../x"}) {
        auto p = parse({"--node-name=n", std::string("--pod-uid=") + bad});
        REQUIRE_FALSE(p.ok());
        CHECK(p.code() == core::Errc::InvalidConfig);
        CHECK(has(p.error().message, "--pod-uid"));
    }
    CHECK(has(gc::usage(), "--pod-uid"));
    CHECK(has(gc::usage(), "POD_UID"));
}
