#include "cni/net_config.h"

#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/allocator.h"

namespace allot::cni {

using core::Errc;
using core::makeError;
using json::Value;

namespace {

using Errors = std::vector<core::Error>;

core::Error bad(const std::string& key, const std::string& why) {
    return makeError(Errc::InvalidConfig, "\"" + key + "\" " + why);
}

Result<std::string> optString(const Value& obj, const std::string& prefix, const char* key) {
    const Value* v = obj.find(key);
    if (!v || v->isNull()) return std::string();
    if (!v->isString())
        return bad(prefix + key, std::string("must be a string, got ") + v->typeName());
    return v->asString();
}

Result<std::vector<std::string>> stringList(const Value& obj, const std::string& prefix,
                                            const char* key) {
    std::vector<std::string> out;
    const Value* v = obj.find(key);
    if (!v || v->isNull()) return out;
    if (!v->isArray())
        return bad(prefix + key, std::string("must be a list of strings, got ") + v->typeName());
    for (size_t i = 0; i < v->items().size(); ++i) {
        const Value& item = v->items()[i];
        if (!item.isString())
            return bad(prefix + key + "[" + std::to_string(i) + "]",
                       std::string("must be a string, got ") + item.typeName());
        out.push_back(item.asString());
    }
    return out;
}

Result<core::RangeSpec> rangeSpec(const Value& obj, const std::string& prefix) {
    core::RangeSpec r;
    auto range = optString(obj, prefix, "range");
    auto start = optString(obj, prefix, "range_start");
    auto end = optString(obj, prefix, "range_end");
    auto exclude = stringList(obj, prefix, "exclude");
    for (auto* s : {&range, &start, &end})
        if (!*s) return s->error();
    if (!exclude) return exclude.error();
    // Every candidate address is checked against every entry.
    if (exclude->size() > kMaxExcludes)
        return bad(prefix + "exclude",
                   "has more than " + std::to_string(kMaxExcludes) + " entries");
    r.range = *range;
    r.rangeStart = *start;
    r.rangeEnd = *end;
    r.exclude = *exclude;
    return r;
}

// Parses "10.0.0.5" or "10.0.0.5/24" (the prefix length of a requested IP is ignored: the
// range decides it).
Result<std::vector<core::IpAddress>> ipList(const Value& v, const std::string& key) {
    std::vector<core::IpAddress> out;
    if (v.isNull()) return out;
    if (!v.isArray())
        return bad(key, std::string("must be a list of IP addresses, got ") + v.typeName());
    for (size_t i = 0; i < v.items().size(); ++i) {
        const Value& item = v.items()[i];
        std::string k = key + "[" + std::to_string(i) + "]";
        if (!item.isString())
            return bad(k, std::string("must be a string, got ") + item.typeName());
        auto ip = core::IpAddress::parse(item.asString().substr(0, item.asString().find('/')));
        if (!ip) return bad(k, ip.error().message);
        out.push_back(*ip);
    }
    return out;
}

Result<Value> readFlatFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return makeError(Errc::NotFound, path);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (text.size() > kMaxConfigBytes)
        return bad("configuration_path", "file " + path + " is larger than 1 MiB");
    auto v = json::parse(text);
    if (!v) return makeError(Errc::InvalidConfig, "flat config " + path + ": " + v.error().message);
    if (!v->isObject())
        return makeError(Errc::InvalidConfig, "flat config " + path + " is not a JSON object");
    return v;
}

// A DNS-1123 label, as Kubernetes requires of namespace names.
bool namespaceName(const std::string& s) {
    if (s.empty() || s.size() > kMaxNamespaceBytes) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return s.front() != '-' && s.back() != '-';
}

bool isFile(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Fills keys absent from `ipam` from `flat`; nested objects ("kubernetes") merge key by key.
// enable_overlapping_ranges is the network config's alone (default true): Whereabouts puts its
// own value back after merging the flat file.
void mergeUnder(Value& ipam, const Value& flat) {
    for (const auto& [key, value] : flat.members()) {
        if (key == "enable_overlapping_ranges") continue;
        Value* mine = ipam.find(key);
        if (!mine || mine->isNull()) {
            ipam.set(key, value);
        } else if (mine->isObject() && value.isObject()) {
            mergeUnder(*mine, value);
        }
    }
}

// The top-level "range" (entry 0 when set) and the ipRanges entries; a bad entry is skipped.
void decodeRanges(const Value& ipam, const std::string& p, core::IpamConfig& c,
                  std::vector<std::string>& warnings, Errors& errors) {
    auto top = rangeSpec(ipam, p);
    if (!top) {
        errors.push_back(top.error());
    } else if (!top->range.empty()) {
        c.ranges.push_back(*top);
        c.topLevelRange = true;
    } else if (!top->rangeStart.empty() || !top->rangeEnd.empty() || !top->exclude.empty()) {
        warnings.push_back(
            "\"ipam.range_start\", \"ipam.range_end\" and \"ipam.exclude\" apply to the "
            "top-level \"range\", which is not set: ignored, as Whereabouts does");
    }
    const Value* list = ipam.find("ipRanges");
    if (!list || list->isNull()) return;
    if (!list->isArray())
        return errors.push_back(
            bad(p + "ipRanges", std::string("must be a list, got ") + list->typeName()));
    if (list->items().size() > static_cast<size_t>(core::kMaxRanges))
        return errors.push_back(
            bad(p + "ipRanges", "has more than " + std::to_string(core::kMaxRanges) + " entries"));
    for (size_t i = 0; i < list->items().size(); ++i) {
        std::string k = p + "ipRanges[" + std::to_string(i) + "].";
        const Value& item = list->items()[i];
        if (!item.isObject()) {
            errors.push_back(bad(k.substr(0, k.size() - 1), "must be an object"));
            continue;
        }
        auto r = rangeSpec(item, k);
        if (!r) {
            errors.push_back(r.error());
        } else if (r->range.empty()) {
            errors.push_back(bad(k + "range", "is required"));
        } else {
            c.ranges.push_back(*r);
        }
    }
}

// The plain string keys, then the namespace they name.
void decodeStrings(const Value& ipam, const std::string& p, core::IpamConfig& c, Errors& errors) {
    struct {
        const char* key;
        std::string* out;
    } strings[] = {{"gateway", &c.gateway},
                   {"network_name", &c.networkName},
                   {"node_slice_size", &c.nodeSliceSize},
                   {"log_file", &c.logFile},
                   {"log_level", &c.logLevel},
                   {"configuration_path", &c.configurationPath},
                   {"namespace", &c.poolNamespace},
                   {"lock_dir", &c.lockDir},
                   {"journal_dir", &c.journalDir},
                   {"relay_socket", &c.relaySocket}};
    for (auto& s : strings) {
        auto v = optString(ipam, p, s.key);
        if (v) *s.out = *v;
        if (!v) errors.push_back(v.error());
    }
    // It goes into request paths: only a real namespace name may ("..", "a/b" must not).
    if (!c.poolNamespace.empty() && !namespaceName(c.poolNamespace)) {
        errors.push_back(bad(p + "namespace", "must be a namespace name: at most " +
                                                  std::to_string(kMaxNamespaceBytes) +
                                                  " lowercase letters, digits or '-', starting "
                                                  "and ending with a letter or digit"));
        c.poolNamespace.clear();
    }
}

// A true/false key: left as it is when absent or null.
void decodeBool(const Value& ipam, const std::string& p, const char* key, bool& out,
                Errors& errors) {
    const Value* v = ipam.find(key);
    if (!v || v->isNull()) return;
    if (v->isBool()) out = v->asBool();
    if (!v->isBool())
        errors.push_back(bad(p + key, std::string("must be true or false, got ") + v->typeName()));
}

// enable_overlapping_ranges, sticky_statefulsets, kubernetes, deadline_ms,
// released_ip_cooldown_s, node_slice_parts and the accepted-but-unused numbers.
void decodeOptions(const Value& ipam, const std::string& p, core::IpamConfig& c, Errors& errors) {
    decodeBool(ipam, p, "enable_overlapping_ranges", c.enableOverlappingRanges, errors);
    decodeBool(ipam, p, "sticky_statefulsets", c.stickyStatefulSets, errors);
    if (const Value* v = ipam.find("kubernetes"); v && !v->isNull()) {
        auto kc = v->isObject() ? optString(*v, p + "kubernetes.", "kubeconfig")
                                : Result<std::string>(bad(p + "kubernetes", "must be an object"));
        if (kc) c.kubeconfig = *kc;
        if (!kc) errors.push_back(kc.error());
    }
    if (const Value* v = ipam.find("deadline_ms"); v && !v->isNull()) {
        auto n = v->asInt();
        if (n && *n > 0 && *n <= core::kMaxDeadlineMs) c.deadlineMs = static_cast<int>(*n);
        if (!n || *n <= 0 || *n > core::kMaxDeadlineMs)
            errors.push_back(
                bad(p + "deadline_ms", "must be a whole number of milliseconds between 1 and " +
                                           std::to_string(core::kMaxDeadlineMs)));
    }
    if (const Value* v = ipam.find("released_ip_cooldown_s"); v && !v->isNull()) {
        auto n = v->asInt();
        if (n && *n >= 0 && *n <= core::kMaxCooldownS) c.cooldownS = *n;
        if (!n || *n < 0 || *n > core::kMaxCooldownS)
            errors.push_back(bad(p + "released_ip_cooldown_s",
                                 "must be a whole number of seconds between 0 and " +
                                     std::to_string(core::kMaxCooldownS)));
    }
    if (const Value* v = ipam.find("node_slice_parts"); v && !v->isNull()) {
        auto n = v->asInt();
        if (n && *n >= 1 && *n <= core::kMaxSliceParts) c.sliceParts = static_cast<int>(*n);
        if (!n || *n < 1 || *n > core::kMaxSliceParts)
            errors.push_back(bad(p + "node_slice_parts", "must be 1, 2, 4, 8 or 16"));
    }
    // Accepted for compatibility and unused: allot takes no global lock and never sleeps.
    for (const char* numeric : {"leader_lease_duration", "leader_renew_deadline",
                                "leader_retry_period", "sleep_for_race"}) {
        if (const Value* v = ipam.find(numeric); v && !v->isNull() && !v->isNumber())
            errors.push_back(
                bad(p + numeric, std::string("must be a number, got ") + v->typeName()));
    }
}

void decodeStaticAddresses(const Value& ipam, const std::string& p, core::IpamConfig& c,
                           Errors& errors) {
    const Value* v = ipam.find("addresses");
    if (!v || v->isNull()) return;
    if (!v->isArray()) return errors.push_back(bad(p + "addresses", "must be a list"));
    for (size_t i = 0; i < v->items().size(); ++i) {
        std::string k = p + "addresses[" + std::to_string(i) + "].";
        const Value& item = v->items()[i];
        if (!item.isObject()) {
            errors.push_back(bad(k.substr(0, k.size() - 1), "must be an object"));
            continue;
        }
        auto a = optString(item, k, "address");
        auto g = optString(item, k, "gateway");
        if (!a) errors.push_back(a.error());
        if (!g) errors.push_back(g.error());
        if (a && a->empty()) errors.push_back(bad(k + "address", "is required"));
        if (a && g && !a->empty()) c.addresses.push_back({*a, *g});
    }
}

core::IpamConfig decodeIpam(const Value& ipam, std::vector<std::string>& warnings, Errors& errors) {
    core::IpamConfig c;
    const std::string p = "ipam.";
    auto type = optString(ipam, p, "type");
    if (type) c.type = *type;
    if (!type) errors.push_back(type.error());
    decodeRanges(ipam, p, c, warnings, errors);
    decodeStrings(ipam, p, c, errors);
    decodeOptions(ipam, p, c, errors);
    decodeStaticAddresses(ipam, p, c, errors);
    return c;
}

// ipam.routes as Whereabouts decodes them (CNI's Route): dst a CIDR, gw an address, mtu,
// advmss, priority, table and scope whole numbers; other keys dropped. Checked here so that no
// address is allocated for a result the main plugin cannot read.
Result<Value> decodeRoutes(const Value& ipam) {
    const Value* r = ipam.find("routes");
    if (!r || r->isNull()) return Value();
    if (!r->isArray())
        return bad("ipam.routes", std::string("must be a list of routes, got ") + r->typeName());
    Value out = Value::array();
    for (size_t i = 0; i < r->items().size(); ++i) {
        const Value& item = r->items()[i];
        std::string k = "ipam.routes[" + std::to_string(i) + "]";
        if (!item.isObject())
            return bad(k, std::string("must be an object, got ") + item.typeName());
        auto dst = optString(item, k + ".", "dst");
        if (!dst) return dst.error();
        if (dst->empty()) return bad(k + ".dst", "is required (a CIDR such as \"0.0.0.0/0\")");
        if (!core::parseGoCidr(*dst, core::IpSyntax::Strict))
            return bad(k + ".dst", "\"" + *dst + "\" is not a CIDR");
        Value route = Value::object();
        route.set("dst", Value::string(*dst));
        auto gw = optString(item, k + ".", "gw");
        if (!gw) return gw.error();
        if (!gw->empty()) {
            if (!core::parseGoIp(*gw, core::IpSyntax::Strict))
                return bad(k + ".gw", "\"" + *gw + "\" is not an IP address");
            route.set("gw", Value::string(*gw));
        }
        for (const char* num : {"mtu", "advmss", "priority", "table", "scope"}) {
            const Value* v = item.find(num);
            if (!v || v->isNull()) continue;
            auto n = v->isNumber() ? v->asInt() : std::nullopt;
            if (!n || *n < INT32_MIN || *n > INT32_MAX)
                return bad(k + "." + num, std::string("must be a whole number, got ") +
                                              (v->isNumber() ? v->asString() : v->typeName()));
            // Go omits a zero mtu, advmss and priority; table and scope are kept when given.
            bool keepZero = std::string_view(num) == "table" || std::string_view(num) == "scope";
            if (*n != 0 || keepZero) route.set(num, Value::number(*n));
        }
        out.push(std::move(route));
    }
    return out;
}

// ipam.dns as CNI's DNS type: nameservers, search and options lists of strings, domain a string;
// other keys dropped, empty ones left out (as Go writes it).
Result<Value> decodeDns(const Value& ipam) {
    const Value* d = ipam.find("dns");
    if (!d || d->isNull()) return Value();
    if (!d->isObject())
        return bad("ipam.dns", std::string("must be an object, got ") + d->typeName());
    Value out = Value::object();
    for (const char* list : {"nameservers", "search", "options"}) {
        auto l = stringList(*d, "ipam.dns.", list);
        if (!l) return l.error();
        if (l->empty()) continue;
        Value arr = Value::array();
        for (auto& s : *l) arr.push(Value::string(s));
        out.set(list, std::move(arr));
    }
    auto domain = optString(*d, "ipam.dns.", "domain");
    if (!domain) return domain.error();
    if (!domain->empty()) out.set("domain", Value::string(*domain));
    return out;
}

// The network configuration on stdin: at most 1 MiB, a JSON object.
Result<Value> parseDocument(std::string_view stdinText) {
    if (stdinText.size() > kMaxConfigBytes)
        return makeError(Errc::Decode, "network configuration is larger than 1 MiB");
    auto doc = json::parse(stdinText);
    if (!doc) return makeError(Errc::Decode, "network configuration: " + doc.error().message);
    if (!doc->isObject())
        return makeError(
            Errc::Decode,
            std::string("network configuration must be a JSON object, got ") + doc->typeName());
    return doc;
}

// Flat file: configuration_path when given (it must exist), else the first default found;
// empty when there is none.
Result<std::string> findFlatFile(const Value& ipam, const std::vector<std::string>& flatFiles,
                                 std::vector<std::string>& warnings) {
    auto confPath = optString(ipam, "ipam.", "configuration_path");
    if (!confPath) return confPath.error();
    std::string flat;
    if (!confPath->empty()) {
        if (isFile(*confPath)) {
            flat = *confPath;
        } else {
            // allot also takes configuration_path as the directory holding the file.
            for (const char* f : {"/whereabouts.conf", "/allot.conf"})
                if (flat.empty() && isFile(*confPath + f)) flat = *confPath + f;
            if (flat.empty())
                warnings.push_back(
                    "\"ipam.configuration_path\": \"" + *confPath +
                    "\" does not exist: looking in the default places, as Whereabouts does");
        }
    }
    for (const auto& f : flatFiles)
        if (flat.empty() && isFile(f)) flat = f;
    return flat;
}

// ipam.log_format: allot's own key, so a value it does not know is refused, not ignored.
void decodeLogFormat(const Value& ipam, NetConf& n, Errors& errors) {
    auto f = optString(ipam, "ipam.", "log_format");
    if (!f) return errors.push_back(f.error());
    if (f->empty() || *f == "text") return;
    if (*f == "json")
        n.jsonLogs = true;
    else
        errors.push_back(
            bad("ipam.log_format", "must be \"json\" or \"text\", got \"" + *f + "\""));
}

// ipam (merged with its flat file) as the core config, the routes and the dns.
void decodeIpamSections(const Value& ipam, NetConf& n, Errors& errors) {
    n.ipam = decodeIpam(ipam, n.warnings, errors);
    decodeLogFormat(ipam, n, errors);
    auto routes = decodeRoutes(ipam);
    if (routes) n.routes = std::move(*routes);
    if (!routes) errors.push_back(routes.error());
    auto dns = decodeDns(ipam);
    if (dns) n.dns = std::move(*dns);
    if (!dns) errors.push_back(dns.error());
}

// Requested IPs: runtimeConfig.ips (the "ips" capability) first, then args.cni.ips.
Result<void> readRequestedIps(const Value& doc, NetConf& n) {
    if (const Value* rc = doc.find("runtimeConfig"); rc && rc->isObject()) {
        if (const Value* ips = rc->find("ips")) {
            auto l = ipList(*ips, "runtimeConfig.ips");
            if (!l) return l.error();
            n.requestedIps = *l;
        }
    }
    if (!n.requestedIps.empty()) return core::success();
    if (const Value* args = doc.find("args"); args && args->isObject()) {
        if (const Value* cni = args->find("cni"); cni && cni->isObject()) {
            if (const Value* ips = cni->find("ips")) {
                auto l = ipList(*ips, "args.cni.ips");
                if (!l) return l.error();
                n.requestedIps = *l;
            }
        }
    }
    return core::success();
}

// allowPersistentIPs (top level, as OVN-Kubernetes reads it) and args.cni's
// ipam-claim-reference (the cni-args Multus copies from the network-selection element).
Result<void> readPersistentIps(const Value& doc, NetConf& n) {
    if (const Value* v = doc.find("allowPersistentIPs"); v && !v->isNull()) {
        if (!v->isBool())
            return bad("allowPersistentIPs",
                       std::string("must be true or false, got ") + v->typeName());
        n.allowPersistentIps = v->asBool();
    }
    if (const Value* args = doc.find("args"); args && args->isObject()) {
        if (const Value* cni = args->find("cni"); cni && cni->isObject()) {
            auto ref = optString(*cni, "args.cni.", "ipam-claim-reference");
            if (!ref) return ref.error();
            n.claimRef = *ref;
        }
    }
    return core::success();
}

Result<void> readValidAttachments(const Value& doc, NetConf& n) {
    const Value* va = doc.find("cni.dev/valid-attachments");
    if (!va) va = doc.find("cni.dev/attachments");
    if (!va || va->isNull()) return core::success();
    if (!va->isArray()) return bad("cni.dev/valid-attachments", "must be a list");
    n.hasValidAttachments = true;
    for (size_t i = 0; i < va->items().size(); ++i) {
        const Value& item = va->items()[i];
        std::string k = "cni.dev/valid-attachments[" + std::to_string(i) + "]";
        if (!item.isObject()) return bad(k, "must be an object");
        auto cid = optString(item, k + ".", "containerID");
        auto ifn = optString(item, k + ".", "ifname");
        if (!cid) return cid.error();
        if (!ifn) return ifn.error();
        n.validAttachments.push_back({*cid, *ifn});
    }
    return core::success();
}

}  // namespace

std::vector<std::string> defaultFlatFiles() {
    return {"/etc/cni/net.d/allot.d/allot.conf",
            "/etc/kubernetes/cni/net.d/whereabouts.d/whereabouts.conf",
            "/etc/cni/net.d/whereabouts.d/whereabouts.conf"};
}

std::vector<std::string> flatFiles(const char* allotFlatFilesEnv) {
    if (!allotFlatFilesEnv) return defaultFlatFiles();
    std::vector<std::string> out;
    std::string_view s = allotFlatFilesEnv;
    while (!s.empty()) {
        size_t c = s.find(':');
        if (c != 0) out.emplace_back(s.substr(0, c));
        if (c == std::string_view::npos) break;
        s.remove_prefix(c + 1);
    }
    return out;
}

Result<NetConf> parseNetConfAll(std::string_view stdinText,
                                const std::vector<std::string>& flatFiles, Errors& errors) {
    auto doc = parseDocument(stdinText);
    if (!doc) return doc.error();
    NetConf n;
    auto ver = optString(*doc, "", "cniVersion");
    if (!ver) return ver.error();
    n.cniVersion = ver->empty() ? "0.1.0" : *ver;
    auto name = optString(*doc, "", "name");
    if (!name) return name.error();
    n.name = *name;

    const Value* v = doc->find("ipam");
    if (!v || v->isNull()) return bad("ipam", "is missing");
    if (!v->isObject()) return bad("ipam", std::string("must be an object, got ") + v->typeName());
    Value ipam = *v;
    auto flat = findFlatFile(ipam, flatFiles, n.warnings);
    if (!flat) return flat.error();
    if (!flat->empty()) {
        auto fv = readFlatFile(*flat);
        if (!fv) return fv.error();
        mergeUnder(ipam, *fv);
        n.flatFile = *flat;
    }

    decodeIpamSections(ipam, n, errors);
    if (auto r = readRequestedIps(*doc, n); !r) errors.push_back(r.error());
    if (auto r = readPersistentIps(*doc, n); !r) errors.push_back(r.error());
    if (const Value* pr = doc->find("prevResult"); pr && !pr->isNull()) n.prevResult = *pr;
    if (auto r = readValidAttachments(*doc, n); !r) errors.push_back(r.error());
    return n;
}

Result<NetConf> parseNetConf(std::string_view stdinText,
                             const std::vector<std::string>& flatFiles) {
    Errors errors;
    auto n = parseNetConfAll(stdinText, flatFiles, errors);
    if (n && !errors.empty()) return errors.front();
    return n;
}

}  // namespace allot::cni
