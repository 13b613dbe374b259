#include "core/sticky.h"

namespace allot::core {

std::string stickyKey(const StatefulSetRef& set) {
    return std::string(kStickyPrefix) + set.ns + "/" + set.name + "/" + set.uid;
}

bool isStickyKey(std::string_view claim) {
    return claim.substr(0, kStickyPrefix.size()) == kStickyPrefix;
}

std::optional<StatefulSetRef> parseStickyKey(std::string_view claim) {
    if (!isStickyKey(claim)) return std::nullopt;
    claim.remove_prefix(kStickyPrefix.size());
    const auto a = claim.find('/');
    if (a == std::string_view::npos) return std::nullopt;
    const auto b = claim.find('/', a + 1);
    if (b == std::string_view::npos) return std::nullopt;
    StatefulSetRef r{std::string(claim.substr(0, a)), std::string(claim.substr(a + 1, b - a - 1)),
                     std::string(claim.substr(b + 1))};
    if (r.ns.empty() || r.name.empty() || r.uid.empty() || r.uid.find('/') != std::string::npos)
        return std::nullopt;
    return r;
}

std::optional<int64_t> podOrdinal(std::string_view set, std::string_view podName) {
    if (podName.size() <= set.size() + 1 || podName.substr(0, set.size()) != set ||
        podName[set.size()] != '-')
        return std::nullopt;
    std::string_view digits = podName.substr(set.size() + 1);
    if (digits.size() > 18 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
    int64_t n = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    return n;
}

StickyDecision decideSticky(const StatefulSetRef& owner, std::string_view podName,
                            const std::optional<StatefulSetView>& set) {
    const std::string who = "StatefulSet " + owner.ns + "/" + owner.name;
    if (!set) return {true, who + " is gone"};
    if (set->uid != owner.uid) return {true, who + " was re-created (another UID)"};
    if (set->deleting) return {true, who + " is being deleted"};
    auto ordinal = podOrdinal(owner.name, podName);
    if (!ordinal) return {false, {}};
    const int64_t start = set->ordinalsStart, replicas = set->replicas < 0 ? 0 : set->replicas;
    if (*ordinal < start || *ordinal - start >= replicas)
        return {true, who + " no longer has ordinal " + std::to_string(*ordinal) + " (replicas " +
                          std::to_string(replicas) + ", ordinals from " + std::to_string(start) +
                          ")"};
    return {false, {}};
}

}  // namespace allot::core
