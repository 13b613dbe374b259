#include "core/ipam_claim.h"

namespace allot::core {

namespace {

Error badStatus(const IpamClaimView& claim, const std::string& value, const std::string& why) {
    return Error{Errc::InvalidConfig,
                 "IPAMClaim " + claim.ref + " status.ips \"" + value + "\" " + why};
}

// The range of `ranges` that may hold `ip`: its CIDR contains it and it is allocatable there.
std::optional<size_t> rangeOf(const std::vector<IpRange>& ranges, const IpAddress& ip) {
    for (size_t i = 0; i < ranges.size(); ++i)
        if (ranges[i].cidr().contains(ip) && ranges[i].allocatable(ip)) return i;
    return std::nullopt;
}

}  // namespace

Result<std::string> claimName(std::string_view ref, std::string_view source) {
    bool ok = !ref.empty() && ref.size() <= 253 && ref.front() != '.' && ref.front() != '-' &&
              ref.back() != '.' && ref.back() != '-';
    for (char c : ref)
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
    if (!ok)
        return Error{Errc::InvalidConfig, std::string(source) + " \"" +
                                              std::string(ref.substr(0, 80)) +
                                              "\" is not an IPAMClaim name"};
    return std::string(ref);
}

Result<ClaimPlan> planClaim(const IpamClaimView& claim, std::string_view network,
                            const std::vector<IpRange>& ranges) {
    ClaimPlan plan;
    if (claim.network != network)
        plan.warnings.push_back("IPAMClaim " + claim.ref + " is for network \"" + claim.network +
                                "\", not \"" + std::string(network) + "\"; using it");
    if (claim.ips.empty()) {
        plan.allocate = true;
        return plan;
    }
    plan.perRange.assign(ranges.size(), std::nullopt);
    for (const std::string& text : claim.ips) {
        auto ip = IpAddress::parse(std::string_view(text).substr(0, text.find('/')));
        if (!ip) return badStatus(claim, text, "is not an IP address");
        auto i = rangeOf(ranges, *ip);
        if (!i) return badStatus(claim, text, "is outside every range of this network");
        if (plan.perRange[*i])
            return badStatus(claim, text, "falls in the same range as " + plan.perRange[*i]->str());
        plan.perRange[*i] = *ip;
    }
    return plan;
}

}  // namespace allot::core
