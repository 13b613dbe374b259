#include "k8s/ipam_claim.h"

namespace allot::k8s {

using core::Errc;
using core::makeError;

namespace {

constexpr size_t kMaxClaimIps = 16;

// The string at obj.section.key; "" when any part is absent.
core::Result<std::string> stringAt(const json::Value& obj, std::string_view section,
                                   std::string_view key) {
    const json::Value* s = obj.find(section);
    if (!s || s->isNull()) return std::string();
    if (!s->isObject())
        return makeError(Errc::Invalid, "IPAMClaim " + std::string(section) + " is not an object");
    auto v = s->getString(key);
    if (!v)
        return makeError(Errc::Invalid, "IPAMClaim " + std::string(section) + "." +
                                            std::string(key) + ": " + v.error().message);
    return v->value_or("");
}

json::Value condition(const core::ClaimStatus& st, const json::Value* old, SystemTime now) {
    const std::string status = st.allocated ? "True" : "False";
    std::string since = formatTime(now);
    if (old && old->isObject())
        if (auto s = old->getString("status"); s && *s && **s == status)
            if (auto t = old->getString("lastTransitionTime"); t && *t) since = **t;
    auto c = json::Value::object();
    c.set("type", json::Value::string(std::string(core::kIpsAllocated)));
    c.set("status", json::Value::string(status));
    c.set("reason", json::Value::string(st.reason));
    c.set("message", json::Value::string(st.message));
    c.set("lastTransitionTime", json::Value::string(since));
    return c;
}

}  // namespace

core::Result<core::IpamClaimView> ipamClaimView(const json::Value& claim) {
    if (!claim.isObject()) return makeError(Errc::Invalid, "IPAMClaim is not an object");
    auto ns = stringAt(claim, "metadata", "namespace");
    auto name = stringAt(claim, "metadata", "name");
    auto network = stringAt(claim, "spec", "network");
    for (auto* r : {&ns, &name, &network})
        if (!*r) return r->error();
    core::IpamClaimView v{*ns + "/" + *name, *network, {}};
    const json::Value* status = claim.find("status");
    const json::Value* ips = status && status->isObject() ? status->find("ips") : nullptr;
    if (!ips || ips->isNull()) return v;
    if (!ips->isArray())
        return makeError(Errc::Invalid, "IPAMClaim " + v.ref + " status.ips is not a list");
    if (ips->items().size() > kMaxClaimIps)
        return makeError(Errc::Invalid, "IPAMClaim " + v.ref + " status.ips has more than " +
                                            std::to_string(kMaxClaimIps) + " addresses");
    for (const json::Value& ip : ips->items()) {
        if (!ip.isString())
            return makeError(Errc::Invalid,
                             "IPAMClaim " + v.ref + " status.ips holds a " + ip.typeName());
        v.ips.push_back(ip.asString());
    }
    return v;
}

json::Value withClaimStatus(json::Value claim, const core::ClaimStatus& st, SystemTime now) {
    json::Value* status = claim.find("status");
    if (!status || !status->isObject()) status = &claim.set("status", json::Value::object());
    auto ips = json::Value::array();
    for (const auto& ip : st.ips) ips.push(json::Value::string(ip));
    status->set("ips", std::move(ips));
    if (!st.ownerPod.empty()) {
        auto owner = json::Value::object();
        owner.set("name", json::Value::string(st.ownerPod));
        status->set("ownerPod", std::move(owner));
    }
    auto conditions = json::Value::array();
    const json::Value* old = nullptr;
    if (const json::Value* cs = status->find("conditions"); cs && cs->isArray()) {
        for (const json::Value& c : cs->items()) {
            const json::Value* t = c.isObject() ? c.find("type") : nullptr;
            if (t && t->isString() && t->asString() == core::kIpsAllocated)
                old = &c;
            else
                conditions.push(c);
        }
    }
    conditions.push(condition(st, old, now));
    status->set("conditions", std::move(conditions));
    return claim;
}

}  // namespace allot::k8s
