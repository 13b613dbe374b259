#include "cni/net_config.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <set>

using namespace allot;
using namespace allot::cni;

static std::string tempFile(const std::string& content) {
    char tmpl[] = "/tmp/allot-flat-XXXXXX";
    int fd = ::mkstemp(tmpl);
    REQUIRE(fd >= 0);
    ::close(fd);
    std::ofstream(tmpl) << content;
    return tmpl;
}

static std::string err(const std::string& text, core::Errc code = core::Errc::InvalidConfig) {
    auto r = parseNetConf(text, {});
    REQUIRE(!r.ok());
    CHECK(r.code() == code);
    return r.error().message;
}

TEST_CASE("every Whereabouts IPAM key is accepted") {
    auto r = parseNetConf(R"({"cniVersion":"1.0.0","name":"blue","type":"macvlan","master":"eth0",
      "ipam":{"type":"whereabouts","range":"10.0.0.0/24","range_start":"10.0.0.10","range_end":"10.0.0.99",
      "exclude":["10.0.0.50/31","10.0.0.60"],"gateway":"10.0.0.1","routes":[{"dst":"0.0.0.0/0"}],
      "dns":{"nameservers":["1.1.1.1"]},"addresses":[{"address":"10.9.0.5/24","gateway":"10.9.0.1"}],
      "network_name":"blue","enable_overlapping_ranges":false,"node_slice_size":"",
      "kubernetes":{"kubeconfig":"/etc/kc"},"log_file":"/tmp/x.log","log_level":"debug",
      "leader_lease_duration":1500,"leader_renew_deadline":1000,"leader_retry_period":500,
      "sleep_for_race":0,"ipRanges":[{"range":"fd00::/64","exclude":["fd00::1"]}],"unknown_key":{"x":1}}})",
                          {});
    REQUIRE(r.ok());
    const auto& c = r->ipam;
    CHECK(c.ranges.size() == 2);
    CHECK(c.topLevelRange);
    CHECK(c.ranges[0].rangeStart == "10.0.0.10");
    CHECK(c.ranges[0].exclude.size() == 2);
    CHECK(c.ranges[1].range == "fd00::/64");
    CHECK(c.gateway == "10.0.0.1");
    CHECK(c.networkName == "blue");
    CHECK(!c.enableOverlappingRanges);
    CHECK(c.kubeconfig == "/etc/kc");
    CHECK(c.logLevel == "debug");
    CHECK(c.addresses.size() == 1);
    CHECK(r->routes.isArray());
    CHECK(r->dns.isObject());
    CHECK(r->name == "blue");
}

TEST_CASE("malformed JSON is a decode error") {
    err("{", core::Errc::Decode);
    err("[1]", core::Errc::Decode);
}

TEST_CASE("wrong types name the key") {
    CHECK(err(R"({"ipam":{"type":"allot","range":5}})").find("ipam.range") != std::string::npos);
    CHECK(err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","exclude":"10.0.0.1"}})")
              .find("exclude") != std::string::npos);
    CHECK(err(R"({"ipam":{"type":"allot","ipRanges":[{"range_start":"10.0.0.1"}]}})")
              .find("ipRanges[0].range") != std::string::npos);
    CHECK(
        err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","enable_overlapping_ranges":"yes"}})")
            .find("enable_overlapping_ranges") != std::string::npos);
    CHECK(err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","routes":[{"dst":"x"}]}})")
              .find("routes[0].dst") != std::string::npos);
    CHECK(err(R"({"ipam":"allot"})").find("ipam") != std::string::npos);
    CHECK(err(R"({"cniVersion":"1.0.0"})").find("ipam") != std::string::npos);
}

TEST_CASE("released_ip_cooldown_s takes whole seconds up to a day, default off") {
    auto r = parseNetConf(
        R"({"ipam":{"type":"allot","range":"10.0.0.0/24","released_ip_cooldown_s":30}})", {});
    REQUIRE(r.ok());
    CHECK(r->ipam.cooldownS == 30);
    CHECK(parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24"}})", {})->ipam.cooldownS ==
          0);
    for (const char* bad : {"-1", "86401", "1.5", "\"30\""})
        CHECK(err(std::string(R"({"ipam":{"type":"allot","range":"10.0.0.0/24",)") +
                  R"("released_ip_cooldown_s":)" + bad + "}}")
                  .find("released_ip_cooldown_s") != std::string::npos);
}

TEST_CASE("node_slice_parts is a whole number, 1 (one pool per slice) unless set") {
    const std::string head = R"({"ipam":{"type":"allot","range":"10.0.0.0/16",)"
                             R"("node_slice_size":"/24","network_name":"n")";
    CHECK(parseNetConf(head + "}}", {})->ipam.sliceParts == 1);
    CHECK(parseNetConf(head + R"(,"node_slice_parts":4}})", {})->ipam.sliceParts == 4);
    for (const char* bad : {"0", "17", "2.5", "\"4\""})
        CHECK(err(head + R"(,"node_slice_parts":)" + bad + "}}").find("node_slice_parts") !=
              std::string::npos);
}

TEST_CASE("sticky_statefulsets is off by default, takes true or false and nothing else") {
    CHECK_FALSE(parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24"}})", {})
                    ->ipam.stickyStatefulSets);
    auto on = parseNetConf(
        R"({"ipam":{"type":"allot","range":"10.0.0.0/24","sticky_statefulsets":true}})", {});
    REQUIRE(on.ok());
    CHECK(on->ipam.stickyStatefulSets);
    CHECK(on->warnings.empty());
    CHECK(err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","sticky_statefulsets":"yes"}})")
              .find("ipam.sticky_statefulsets") != std::string::npos);
}

TEST_CASE("allowPersistentIPs and args.cni's ipam-claim-reference are read, without a warning") {
    auto r = parseNetConf(R"({"name":"vm-net","allowPersistentIPs":true,
        "args":{"cni":{"ipam-claim-reference":"vm-a.pod7"}},
        "ipam":{"type":"allot","range":"10.0.0.0/24"}})",
                          {});
    REQUIRE(r.ok());
    CHECK(r->allowPersistentIps);
    CHECK(r->claimRef == "vm-a.pod7");
    CHECK(r->warnings.empty());  // acted on by the plugin's ADD (engine/owned_add.h)
    CHECK(err(R"({"allowPersistentIPs":"yes","ipam":{"type":"allot","range":"10.0.0.0/24"}})")
              .find("allowPersistentIPs") != std::string::npos);
    CHECK(err(R"({"args":{"cni":{"ipam-claim-reference":1}},"ipam":{"type":"allot"}})")
              .find("ipam-claim-reference") != std::string::npos);
}

TEST_CASE("the flat file fills keys the network config leaves out; the network config wins") {
    auto flat = tempFile(
        R"({"kubernetes":{"kubeconfig":"/flat/kc"},"range":"10.9.0.0/16","network_name":"flat"})");
    auto r =
        parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24"}})", {"/nonexistent", flat});
    REQUIRE(r.ok());
    CHECK(r->ipam.kubeconfig == "/flat/kc");
    CHECK(r->ipam.ranges[0].range == "10.0.0.0/24");
    CHECK(r->ipam.networkName == "flat");
    CHECK(r->flatFile == flat);
}

TEST_CASE("configuration_path selects the flat file; a missing one falls back with a warning") {
    auto flat = tempFile(R"({"log_level":"error"})");
    auto r = parseNetConf(
        R"({"ipam":{"type":"allot","range":"10.0.0.0/24","configuration_path":")" + flat + "\"}}",
        {});
    REQUIRE(r.ok());
    CHECK(r->ipam.logLevel == "error");
    // Whereabouts then looks in its default places; so does allot, and says so.
    auto fallback = tempFile(R"({"log_level":"debug"})");
    auto m = parseNetConf(R"({"ipam":{"type":"allot","configuration_path":"/no/such/file"}})",
                          {fallback});
    REQUIRE(m.ok());
    CHECK(m->flatFile == fallback);
    REQUIRE(m->warnings.size() == 1);
    CHECK(m->warnings[0].find("/no/such/file") != std::string::npos);
}

TEST_CASE(
    "allot.d/allot.conf is looked up before Whereabouts' flat files; configuration_path wins") {
    auto d = defaultFlatFiles();
    REQUIRE(d.size() == 3);
    CHECK(d[0] == "/etc/cni/net.d/allot.d/allot.conf");
    CHECK(d[1] == "/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf");
    CHECK(d[2] == "/etc/cni/net.d/whereabouts.d/whereabouts.conf");
    // The search list is tried in order: the first that exists is merged.
    auto allotConf = tempFile(R"({"kubernetes":{"kubeconfig":"/allot/kc"}})");
    auto waConf = tempFile(R"({"kubernetes":{"kubeconfig":"/wa/kc"}})");
    auto r =
        parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24"}})", {allotConf, waConf});
    REQUIRE(r.ok());
    CHECK(r->ipam.kubeconfig == "/allot/kc");
    auto p = parseNetConf(
        R"({"ipam":{"type":"allot","range":"10.0.0.0/24","configuration_path":")" + waConf + "\"}}",
        {allotConf, waConf});
    REQUIRE(p.ok());
    CHECK(p->ipam.kubeconfig == "/wa/kc");
}

TEST_CASE("dns is checked when the config is parsed: a string nameservers is a code-7 error") {
    CHECK(err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","dns":{"nameservers":"1.1.1.1"}}})")
              .find("ipam.dns.nameservers") != std::string::npos);
    CHECK(err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","dns":{"search":[1]}}})")
              .find("ipam.dns.search[0]") != std::string::npos);
    CHECK(err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","dns":{"domain":["a"]}}})")
              .find("ipam.dns.domain") != std::string::npos);
    CHECK(err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","dns":"1.1.1.1"}})")
              .find("ipam.dns") != std::string::npos);
    // What CNI's DNS type holds is kept, as Go writes it: empty keys and unknown ones left out.
    auto r = parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24",
      "dns":{"nameservers":["1.1.1.1"],"search":[],"domain":"x.local","ttl":5}}})",
                          {});
    REQUIRE(r.ok());
    CHECK(r->dns.dump() == R"({"nameservers":["1.1.1.1"],"domain":"x.local"})");
}

TEST_CASE("routes are checked when the config is parsed") {
    auto conf = [](const std::string& routes) {
        return R"({"ipam":{"type":"allot","range":"10.0.0.0/24","routes":)" + routes + "}}";
    };
    CHECK(err(conf(R"({"dst":"0.0.0.0/0"})")).find("ipam.routes") != std::string::npos);
    CHECK(err(conf(R"(["0.0.0.0/0"])")).find("ipam.routes[0]") != std::string::npos);
    CHECK(err(conf(R"([{"gw":"10.0.0.1"}])")).find("ipam.routes[0].dst") != std::string::npos);
    CHECK(err(conf(R"([{"dst":"0.0.0.0/0","gw":"010.0.0.1"}])")).find("ipam.routes[0].gw") !=
          std::string::npos);
    CHECK(err(conf(R"([{"dst":"0.0.0.0/0","mtu":"1500"}])")).find("ipam.routes[0].mtu") !=
          std::string::npos);
    CHECK(err(conf(R"([{"dst":"0.0.0.0/0","priority":1.5}])")).find("ipam.routes[0].priority") !=
          std::string::npos);
    auto r = parseNetConf(
        conf(R"([{"dst":"0.0.0.0/0","gw":"10.0.0.1","mtu":1400,"table":0,"x":1}])"), {});
    REQUIRE(r.ok());
    CHECK(r->routes.dump() == R"([{"dst":"0.0.0.0/0","gw":"10.0.0.1","mtu":1400,"table":0}])");
}

TEST_CASE("top-level range_start without a top-level range is ignored with a warning") {
    auto r = parseNetConf(R"({"ipam":{"type":"allot","range_start":"10.0.0.5",
      "ipRanges":[{"range":"10.0.0.0/24"}]}})",
                          {});
    REQUIRE(r.ok());
    CHECK(r->ipam.ranges.size() == 1);
    REQUIRE(r->warnings.size() == 1);
    CHECK(r->warnings[0].find("ipam.range_start") != std::string::npos);
}

TEST_CASE("a broken flat file is a config error naming the file") {
    auto flat = tempFile("{oops");
    auto r = parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24"}})", {flat});
    REQUIRE(!r.ok());
    CHECK(r.error().message.find(flat) != std::string::npos);
}

TEST_CASE("requested IPs come from runtimeConfig.ips, else args.cni.ips") {
    auto r = parseNetConf(
        R"({"ipam":{"type":"allot","range":"10.0.0.0/24"},"runtimeConfig":{"ips":["10.0.0.7/24"]},
      "args":{"cni":{"ips":["10.0.0.8"]}}})",
        {});
    REQUIRE(r.ok());
    REQUIRE(r->requestedIps.size() == 1);
    CHECK(r->requestedIps[0].str() == "10.0.0.7");
    auto a = parseNetConf(
        R"({"ipam":{"type":"allot","range":"10.0.0.0/24"},"args":{"cni":{"ips":["10.0.0.8"]}}})",
        {});
    CHECK(a->requestedIps[0].str() == "10.0.0.8");
    CHECK(err(R"({"ipam":{"type":"allot"},"runtimeConfig":{"ips":["nope"]}})")
              .find("runtimeConfig.ips[0]") != std::string::npos);
}

TEST_CASE("GC attachments are read from cni.dev/valid-attachments or cni.dev/attachments") {
    auto r = parseNetConf(R"({"cniVersion":"1.1.0","ipam":{"type":"allot","range":"10.0.0.0/24"},
      "cni.dev/valid-attachments":[{"containerID":"a","ifname":"eth0"}]})",
                          {});
    REQUIRE(r.ok());
    CHECK(r->hasValidAttachments);
    CHECK(r->validAttachments.size() == 1);
    auto o = parseNetConf(
        R"({"ipam":{"type":"allot","range":"10.0.0.0/24"},"cni.dev/attachments":[]})", {});
    CHECK(o->hasValidAttachments);
}

TEST_CASE("oversized configs are refused") {
    std::string big = R"({"ipam":{"type":"allot","range":"10.0.0.0/24","pad":")" +
                      std::string(kMaxConfigBytes, 'x') + "\"}}";
    CHECK(err(big, core::Errc::Decode).find("1 MiB") != std::string::npos);
}

TEST_CASE("more than kMaxExcludes exclude entries in a range are refused, naming the key") {
    auto conf = [](size_t n, bool inList) {
        std::string ex;
        for (size_t i = 0; i < n; ++i) ex += std::string(i ? "," : "") + "\"10.0.0.7\"";
        std::string r = R"("range":"10.0.0.0/24","exclude":[)" + ex + "]";
        return inList ? R"({"ipam":{"type":"allot","ipRanges":[{)" + r + "}]}}"
                      : R"({"ipam":{"type":"allot",)" + r + "}}";
    };
    CHECK(parseNetConf(conf(kMaxExcludes, false), {}).ok());
    CHECK(err(conf(kMaxExcludes + 1, false)).find("\"ipam.exclude\" has more than 1024") !=
          std::string::npos);
    CHECK(err(conf(kMaxExcludes + 1, true)).find("ipam.ipRanges[0].exclude") != std::string::npos);
}

TEST_CASE("the pool namespace must be a namespace name: it goes into request paths") {
    auto conf = [](const std::string& ns) {
        return R"({"ipam":{"type":"allot","range":"10.0.0.0/24","namespace":")" + ns + "\"}}";
    };
    for (const char* ok : {"kube-system", "pools", "a", "team-1"}) {
        CAPTURE(ok);
        auto r = parseNetConf(conf(ok), {});
        REQUIRE(r.ok());
        CHECK(r->ipam.poolNamespace == ok);
    }
    const std::string tooLong(64, 'a');
    for (const char* bad :
         {"..", ".", "../kube-system", "a/b", "Pools", "-a", "a-", "a.b", "a?b", tooLong.c_str()}) {
        CAPTURE(bad);
        CHECK(err(conf(bad)).find("\"ipam.namespace\" must be a namespace name") !=
              std::string::npos);
    }
}

TEST_CASE("ALLOT_FLAT_FILES replaces the flat-file search list; unset keeps the defaults") {
    CHECK(flatFiles(nullptr) == defaultFlatFiles());
    CHECK(flatFiles("/a/x.conf::/b/y.conf:") == std::vector<std::string>{"/a/x.conf", "/b/y.conf"});
    CHECK(flatFiles("").empty());
}

TEST_CASE("enable_overlapping_ranges comes from the network config only, as in Whereabouts") {
    auto flat = tempFile(R"({"enable_overlapping_ranges":false})");
    auto r = parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24"}})", {flat});
    REQUIRE(r.ok());
    CHECK(r->ipam.enableOverlappingRanges);
}

TEST_CASE("parseNetConfAll reports every bad key, keeps the good ones; parseNetConf the first") {
    const std::string text = R"({"cniVersion":"1.0.0","name":"n","ipam":{"type":"allot",
      "range":"10.0.0.0/24","gateway":7,"ipRanges":[{"range":"10.1.0.0/24"},{"range":5},"x"],
      "enable_overlapping_ranges":"yes","deadline_ms":-1,"routes":"no"}})";
    std::vector<core::Error> errors;
    auto r = parseNetConfAll(text, {}, errors);
    REQUIRE(r.ok());
    std::vector<std::string> keys;
    for (const auto& e : errors) keys.push_back(e.message.substr(0, e.message.find("\" ") + 1));
    CHECK(keys == std::vector<std::string>{"\"ipam.ipRanges[1].range\"", "\"ipam.ipRanges[2]\"",
                                           "\"ipam.gateway\"", "\"ipam.enable_overlapping_ranges\"",
                                           "\"ipam.deadline_ms\"", "\"ipam.routes\""});
    CHECK(r->ipam.ranges.size() == 2);  // the top-level range and ipRanges[0]
    CHECK(r->ipam.enableOverlappingRanges);
    CHECK(err(text) == errors.front().message);
}

TEST_CASE("parseNetConfAll still refuses a document it cannot read at all") {
    std::vector<core::Error> errors;
    CHECK(parseNetConfAll("{", {}, errors).code() == core::Errc::Decode);
    CHECK(parseNetConfAll(R"({"name":"n"})", {}, errors).code() == core::Errc::InvalidConfig);
    CHECK(errors.empty());
}

// What parseNetConfAll says about `ipam` (every error, or the one that stopped it).
static std::string problems(const std::string& ipam) {
    std::vector<core::Error> errors;
    auto r =
        parseNetConfAll(R"({"cniVersion":"1.0.0","name":"n","ipam":)" + ipam + "}", {}, errors);
    std::string out = r.ok() ? "" : r.error().message;
    for (const auto& e : errors) out += e.message + "\n";
    return out;
}

TEST_CASE("every key of kIpamKeys is decoded: a value of the wrong type is refused, naming it") {
    // [{}] is of the wrong type for every key: no string, bool, number or object, and a list
    // whose entry lacks what every list key requires.
    for (std::string_view key : kIpamKeys) {
        CAPTURE(key);
        std::string said = problems("{\"" + std::string(key) + "\":[{}]}");
        CHECK(said.find("\"ipam." + std::string(key)) != std::string::npos);
    }
    // A key outside the table is not read at all; node_dirs counts only in the flat file.
    CHECK(problems(R"({"no_such_key":[{}]})").empty());
    CHECK(problems(R"({"node_dirs":[{}]})").empty());
}

TEST_CASE("kIpamKeys names each key once") {
    std::set<std::string_view> seen;
    for (std::string_view key : kIpamKeys) CHECK_MESSAGE(seen.insert(key).second, key);
}

TEST_CASE("ipam.log_format is text by default, json when asked, and an error otherwise") {
    auto def = parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24"}})", {});
    REQUIRE(def.ok());
    CHECK_FALSE(def->jsonLogs);
    auto text =
        parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","log_format":"text"}})", {});
    REQUIRE(text.ok());
    CHECK_FALSE(text->jsonLogs);
    auto json =
        parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","log_format":"json"}})", {});
    REQUIRE(json.ok());
    CHECK(json->jsonLogs);
    auto msg = err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","log_format":"logfmt"}})");
    CHECK(msg.find("ipam.log_format") != std::string::npos);
    CHECK(msg.find("\"logfmt\"") != std::string::npos);
    CHECK(err(R"({"ipam":{"type":"allot","range":"10.0.0.0/24","log_format":1}})")
              .find("ipam.log_format") != std::string::npos);
}

TEST_CASE("log_format is taken from the flat file, as log_file and log_level are") {
    auto flat = tempFile(R"({"log_format":"json","log_file":"/var/log/allot.log"})");
    auto r = parseNetConf(R"({"ipam":{"type":"allot","range":"10.0.0.0/24"}})", {flat});
    REQUIRE(r.ok());
    CHECK(r->jsonLogs);
    CHECK(r->ipam.logFile == "/var/log/allot.log");
    // The network config's own value wins over the flat file's.
    auto own = parseNetConf(
        R"({"ipam":{"type":"allot","range":"10.0.0.0/24","log_format":"text"}})", {flat});
    REQUIRE(own.ok());
    CHECK_FALSE(own->jsonLogs);
}
