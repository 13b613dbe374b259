#include "plugin/cni_result.h"

#include <array>
#include <charconv>

namespace allot::plugin {

using core::Errc;
using engine::IpResult;
using json::Value;

namespace {

int codeFor(Errc code) {
    switch (code) {
        case Errc::InvalidConfig:
            return kInvalidNetworkConfig;
        case Errc::BadEnvironment:
            return kInvalidEnvironment;
        case Errc::Decode:
            return kDecodeFailure;
        case Errc::Unsupported:
            return kIncompatibleVersion;
        case Errc::Transient:
        case Errc::Conflict:
        case Errc::AlreadyExists:
        case Errc::Expired:
        case Errc::SliceSealed:
        case Errc::SliceMoved:
        case Errc::SliceAwaited:
        case Errc::TooLarge:
            return kTryAgainLater;
        case Errc::Exhausted:
            return kAddressesExhausted;
        case Errc::Unauthorized:
        case Errc::Forbidden:
            return kAccessDenied;
        case Errc::NotFound:
            return kInvalidNetworkConfig;
        case Errc::Invalid:
        case Errc::Internal:
            return kInternal;
    }
    return kInternal;
}

std::string detailsFor(const core::Error& e) {
    const char* what = "";
    switch (e.code) {
        case Errc::InvalidConfig:
            what =
                "the network configuration (or the flat file merged under it) has a value allot "
                "refuses; fix the key named above";
            break;
        case Errc::BadEnvironment:
            what = "a CNI_* environment variable from the runtime is missing or malformed";
            break;
        case Errc::Decode:
            what = "the input could not be decoded as the JSON the CNI spec describes";
            break;
        case Errc::Unsupported:
            what = "a version or feature this allot does not support";
            break;
        case Errc::NotFound:
            what =
                "something the configuration names does not exist (a kubeconfig, a namespace, an "
                "IPPool or its CRD)";
            break;
        case Errc::Transient:
        case Errc::Conflict:
        case Errc::AlreadyExists:
        case Errc::Expired:
            what =
                "the API server was unreachable, slow or kept conflicting until the deadline; "
                "nothing is left half-done, and the call can be retried";
            break;
        case Errc::SliceSealed:
        case Errc::SliceMoved:
            what =
                "allot-gc's slice controller is moving this node's slice of the range; the call "
                "can be retried once the NodeSlicePool is rewritten";
            break;
        case Errc::SliceAwaited:
            what =
                "allot-gc's leader has not assigned this node a slice of the range yet (a new "
                "network, or every slice taken); the call waited for it until its deadline";
            break;
        case Errc::Exhausted:
            what =
                "no free address is left in the range (allocations, excludes and the gateway "
                "included); widen the range or free addresses";
            break;
        case Errc::TooLarge:
            what =
                "an IPPool object is at the size etcd takes; split the network with "
                "node_slice_size or smaller ranges";
            break;
        case Errc::Unauthorized:
        case Errc::Forbidden:
            what =
                "the API server refused allot's identity; check the kubeconfig and the RBAC rules "
                "for IPPools and OverlappingRangeIPReservations";
            break;
        case Errc::Invalid:
            what = "the API server or the stored data rejected what allot sent or read";
            break;
        case Errc::Internal:
            what = "an unexpected failure inside allot";
            break;
    }
    return std::string(core::errcName(e.code)) + ": " + e.message + " (" + what + ")";
}

}  // namespace

CniError cniError(const core::Error& e) {
    return CniError{codeFor(e.code), e.message, detailsFor(e)};
}

CniError cniError(const core::Error& e, Command command) {
    CniError out = cniError(e);
    if (command == Command::Check && e.code == Errc::NotFound) out.code = kCheckFailed;
    if (command == Command::Status) out.code = kPluginNotAvailable;
    return out;
}

const std::vector<std::string>& supportedVersions() {
    static const std::vector<std::string> v = {"0.1.0", "0.2.0", "0.3.0", "0.3.1",
                                               "0.4.0", "1.0.0", "1.1.0"};
    return v;
}

bool isSupportedVersion(const std::string& v) {
    for (const auto& s : supportedVersions())
        if (s == v) return true;
    return false;
}

int compareVersions(const std::string& a, const std::string& b) {
    auto parts = [](const std::string& s) {
        int out[3] = {0, 0, 0};
        size_t pos = 0;
        for (int i = 0; i < 3 && pos <= s.size(); ++i) {
            size_t dot = s.find('.', pos);
            if (dot == std::string::npos) dot = s.size();
            std::from_chars(s.data() + pos, s.data() + dot, out[i]);
            pos = dot + 1;
        }
        return std::array<int, 3>{out[0], out[1], out[2]};
    };
    auto x = parts(a), y = parts(b);
    return x < y ? -1 : (x == y ? 0 : 1);
}

namespace {

std::string cidrText(const IpResult& r) {
    return r.ip.str() + "/" + std::to_string(r.prefix);
}

// A route's family follows its destination.
bool routeIsV4(const Value& route) {
    const Value* dst = route.find("dst");
    return !(dst && dst->isString() && dst->asString().find(':') != std::string::npos);
}

}  // namespace

std::string formatResult(const CniResult& r, const std::string& version) {
    Value out = Value::object();
    out.set("cniVersion", Value::string(version));
    if (compareVersions(version, "0.3.0") < 0) {
        for (bool v4 : {true, false}) {
            const IpResult* first = nullptr;
            for (const auto& ip : r.ips)
                if (ip.ip.isV4() == v4 && !first) first = &ip;
            if (!first) continue;
            Value block = Value::object();
            block.set("ip", Value::string(cidrText(*first)));
            if (first->gateway) block.set("gateway", Value::string(first->gateway->str()));
            if (r.routes.isArray()) {
                Value routes = Value::array();
                for (const auto& route : r.routes.items())
                    if (routeIsV4(route) == v4) routes.push(route);
                if (!routes.items().empty()) block.set("routes", std::move(routes));
            }
            out.set(v4 ? "ip4" : "ip6", std::move(block));
        }
        if (r.dns.isObject()) out.set("dns", r.dns);
        return out.dump();
    }
    const bool withVersion = compareVersions(version, "1.0.0") < 0;
    Value ips = Value::array();
    for (const auto& ip : r.ips) {
        Value e = Value::object();
        if (withVersion) e.set("version", Value::string(ip.ip.isV4() ? "4" : "6"));
        e.set("address", Value::string(cidrText(ip)));
        if (ip.gateway) e.set("gateway", Value::string(ip.gateway->str()));
        ips.push(std::move(e));
    }
    out.set("ips", std::move(ips));
    if (r.routes.isArray() && !r.routes.items().empty()) out.set("routes", r.routes);
    out.set("dns", r.dns.isObject() ? r.dns : Value::object());
    return out.dump();
}

std::string formatError(const std::string& version, const CniError& e) {
    Value out = Value::object();
    out.set("cniVersion", Value::string(version));
    out.set("code", Value::number(e.code));
    out.set("msg", Value::string(e.msg));
    if (!e.details.empty()) out.set("details", Value::string(e.details));
    return out.dump();
}

std::string formatVersionInfo(const std::string& version) {
    Value out = Value::object();
    out.set("cniVersion", Value::string(version));
    Value list = Value::array();
    for (const auto& v : supportedVersions()) list.push(Value::string(v));
    out.set("supportedVersions", std::move(list));
    return out.dump();
}

std::vector<IpResult> prevResultIps(const Value& prev) {
    std::vector<IpResult> out;
    if (!prev.isObject()) return out;
    auto add = [&](const Value* addr, const Value* gw) {
        if (!addr || !addr->isString()) return;
        auto c = core::Cidr::parse(addr->asString());
        auto ip = core::IpAddress::parse(addr->asString().substr(0, addr->asString().find('/')));
        if (!c || !ip) return;
        IpResult r{*ip, c->length(), std::nullopt};
        if (gw && gw->isString())
            if (auto g = core::IpAddress::parse(gw->asString())) r.gateway = *g;
        out.push_back(r);
    };
    if (const Value* ips = prev.find("ips"); ips && ips->isArray()) {
        for (const auto& e : ips->items())
            if (e.isObject()) add(e.find("address"), e.find("gateway"));
    }
    for (const char* k : {"ip4", "ip6"}) {
        if (const Value* b = prev.find(k); b && b->isObject())
            add(b->find("ip"), b->find("gateway"));
    }
    return out;
}

}  // namespace allot::plugin
