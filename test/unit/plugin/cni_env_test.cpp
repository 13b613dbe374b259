#include "plugin/cni_env.h"

#include <doctest/doctest.h>

using namespace allot::plugin;
using allot::core::Errc;

static EnvMap addEnv() {
    return {{"CNI_COMMAND", "ADD"},
            {"CNI_CONTAINERID", "abc123"},
            {"CNI_NETNS", "/var/run/netns/x"},
            {"CNI_IFNAME", "net1"},
            {"CNI_PATH", "/opt/cni/bin"}};
}

static std::string envErr(EnvMap env) {
    auto r = parseEnv(env);
    REQUIRE(!r.ok());
    CHECK(r.code() == Errc::BadEnvironment);
    return r.error().message;
}

TEST_CASE("ADD needs CNI_CONTAINERID, CNI_NETNS and CNI_IFNAME") {
    CHECK(parseEnv(addEnv()).ok());
    for (const char* key : {"CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"}) {
        auto e = addEnv();
        e.erase(key);
        CHECK(envErr(e).find(key) != std::string::npos);
    }
}

TEST_CASE("DEL does not need CNI_NETNS; VERSION, GC and STATUS need no attachment") {
    auto e = addEnv();
    e["CNI_COMMAND"] = "DEL";
    e.erase("CNI_NETNS");
    CHECK(parseEnv(e).ok());
    CHECK(parseEnv({{"CNI_COMMAND", "VERSION"}}).ok());
    CHECK(parseEnv({{"CNI_COMMAND", "GC"}}).ok());
    CHECK(parseEnv({{"CNI_COMMAND", "STATUS"}}).ok());
}

TEST_CASE("a missing or unknown CNI_COMMAND is refused") {
    CHECK(envErr({}).find("CNI_COMMAND") != std::string::npos);
    CHECK(envErr({{"CNI_COMMAND", "FROB"}}).find("FROB") != std::string::npos);
}

TEST_CASE("container IDs and interface names are validated") {
    auto e = addEnv();
    e["CNI_CONTAINERID"] = "-bad";
    CHECK(envErr(e).find("CNI_CONTAINERID") != std::string::npos);
    e["CNI_CONTAINERID"] = "a/b";
    CHECK(envErr(e).find("CNI_CONTAINERID") != std::string::npos);
    e = addEnv();
    for (const char* bad : {"a/b", "..", "thisnameistoolong", "a b", "a:b"}) {
        e["CNI_IFNAME"] = bad;
        CHECK(envErr(e).find("CNI_IFNAME") != std::string::npos);
    }
}

TEST_CASE("CNI_ARGS keys in any order, split on the first '='") {
    auto a = parseCniArgs(
        "K8S_POD_NAMESPACE=ns;IgnoreUnknown=1;K8S_POD_NAME=web-0;FOO=a=b;"
        "K8S_POD_UID=u-1;K8S_POD_INFRA_CONTAINER_ID=abc");
    REQUIRE(a.ok());
    CHECK(a->podRef() == "ns/web-0");
    CHECK(a->podUid == "u-1");
    CHECK(a->infraContainerId == "abc");
}

TEST_CASE("unknown CNI_ARGS keys need IgnoreUnknown") {
    auto a = parseCniArgs("FOO=bar");
    REQUIRE(!a.ok());
    CHECK(a.error().message.find("FOO") != std::string::npos);
    CHECK(parseCniArgs("FOO=bar;IgnoreUnknown=true").ok());
    CHECK(!parseCniArgs("novalue").ok());
    CHECK(parseCniArgs("").ok());
}

TEST_CASE("GATEWAY= in CNI_ARGS is Whereabouts' key: known, read by ADD only") {
    auto a = parseCniArgs("K8S_POD_NAME=p;GATEWAY=10.0.0.1,fd00::1");
    REQUIRE(a.ok());
    CHECK(a->gatewayText == "10.0.0.1,fd00::1");
    auto gws = parseArgGateways(" 10.0.0.1 ,fd00::1");
    REQUIRE(gws.ok());
    REQUIRE(gws->size() == 2);
    CHECK((*gws)[1].str() == "fd00::1");
    auto bad = parseArgGateways("10.0.0.1,,");
    REQUIRE(!bad.ok());
    CHECK(bad.error().message.find("GATEWAY") != std::string::npos);
}

TEST_CASE("IP= in CNI_ARGS gives requested addresses") {
    auto a = parseCniArgs("IP=10.0.0.5/24,fd00::5");
    REQUIRE(a.ok());
    auto ips = parseArgIps(a->ipText);
    REQUIRE(ips.ok());
    REQUIRE(ips->size() == 2);
    CHECK((*ips)[0].str() == "10.0.0.5");
    CHECK((*ips)[1].str() == "fd00::5");
    auto bad = parseArgIps("10.0.0.500");
    REQUIRE(!bad.ok());
    CHECK(bad.code() == allot::core::Errc::BadEnvironment);
    CHECK(bad.error().message.find("10.0.0.500") != std::string::npos);
}

TEST_CASE("a malformed IP= in CNI_ARGS does not fail parsing the environment") {
    // Only ADD uses IP=, and only when the config requests nothing itself (CONVENTIONS.md).
    auto e = parseEnv({{"CNI_COMMAND", "DEL"},
                       {"CNI_CONTAINERID", "c1"},
                       {"CNI_IFNAME", "net1"},
                       {"CNI_ARGS", "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;IP=notanip"}});
    REQUIRE(e.ok());
    CHECK(e->args.podRef() == "ns/p");
    CHECK(e->args.ipText == "notanip");
}
