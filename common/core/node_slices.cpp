#include "core/node_slices.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "core/naming.h"

namespace allot::core {

namespace {

struct Span {
    u128 first, last;
};

Span spanOf(const Cidr& c) {
    return {c.first().value(), c.last().value()};
}

bool inside(const Cidr& range, const Cidr& slice) {
    return slice.family() == range.family() && slice.length() >= range.length() &&
           range.contains(slice.network());
}

// Disjoint, sorted spans covering `spans`.
std::vector<Span> merged(std::vector<Span> spans) {
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.first < b.first; });
    std::vector<Span> out;
    for (const auto& s : spans) {
        if (!out.empty() && s.first <= out.back().last) {
            out.back().last = std::max(out.back().last, s.last);
            continue;
        }
        out.push_back(s);
    }
    return out;
}

bool overlapsAny(const std::vector<Span>& disjoint, const Span& s) {
    // The first span ending at or after s.first is the only candidate.
    auto it = std::lower_bound(disjoint.begin(), disjoint.end(), s.first,
                               [](const Span& a, u128 v) { return a.last < v; });
    return it != disjoint.end() && it->first <= s.last;
}

struct Kept {
    Cidr slice;
    SliceAllocation entry;
};

// The current entries sorted into those kept in the range and the stale ones kept at the end.
class Sorted {
  public:
    std::vector<Kept> kept;
    std::vector<SliceAllocation> stale;
    std::vector<Span> staleInRange;
    std::set<std::string> holders;  // live Nodes with a kept slice

    bool clashes(const Span& s) const {
        auto it = keptSpans_.upper_bound(s.last);  // first span starting after s
        return it != keptSpans_.begin() && std::prev(it)->second >= s.first;
    }
    void keep(const Cidr& c, const SliceAllocation& e, bool alive) {
        kept.push_back({c, e});
        keptSpans_[c.first().value()] = c.last().value();
        if (alive) holders.insert(e.nodeName);
    }
    std::vector<Span> blocked() const {
        std::vector<Span> all = staleInRange;
        for (const auto& [first, last] : keptSpans_) all.push_back({first, last});
        return merged(std::move(all));
    }

  private:
    std::map<u128, u128> keptSpans_;  // disjoint: first -> last
};

Sorted sortCurrent(const SliceInput& in, const SliceBusy& busy) {
    const std::set<std::string> alive(in.nodes.begin(), in.nodes.end());
    Sorted s;
    for (const auto& e : in.current) {
        if (e.nodeName.empty()) continue;  // free slices are cut again below
        auto c = Cidr::parse(e.sliceRange);
        if (!c) continue;  // not a slice: nothing can have been allocated from it
        const bool in_ = inside(in.range, *c);
        const bool live = alive.count(e.nodeName) > 0;
        // Usable in place: in the range, clashing with no kept slice, the node's first one.
        const bool usable = in_ && !s.clashes(spanOf(*c)) && !(live && s.holders.count(e.nodeName));
        if (usable && live && c->length() == in.sliceLength) {
            s.keep(*c, e, live);
            continue;
        }
        // Another size, a gone node, or no longer usable: only while its pool holds addresses.
        if (!busy(e)) continue;
        if (usable) {
            s.keep(*c, e, live);
            continue;
        }
        s.stale.push_back(e);
        if (in_) s.staleInRange.push_back(spanOf(*c));
    }
    return s;
}

}  // namespace

Result<int> parseSliceSize(std::string_view text) {
    std::string_view s = text;
    if (!s.empty() && s[0] == '/') s.remove_prefix(1);
    int len = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), len);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || len < 0 || len > 128)
        return makeError(Errc::InvalidConfig, "slice size \"" + std::string(text) +
                                                  "\" is not a prefix length like \"/28\"");
    return len;
}

std::string nodeSlicePoolName(const std::string& sliceName, size_t index, const Cidr& range) {
    if (index == 0) return sliceName;
    return sliceName + "-" + normalizeRange(range.str());
}

Result<int> sliceLengthFor(const Cidr& first, int firstLength, const Cidr& range) {
    const int len = range.length() + (firstLength - first.length());
    if (firstLength <= first.length() || len > range.network().bits())
        return makeError(Errc::InvalidConfig,
                         "node_slice_size /" + std::to_string(firstLength) + " cuts " +
                             first.str() + " into more slices than " + range.str() + " can hold");
    return len;
}

Result<std::vector<Cidr>> carveSlices(const Cidr& range, int length) {
    const int bits = range.network().bits();
    if (length <= range.length() || length > bits)
        return makeError(Errc::InvalidConfig, "slice size /" + std::to_string(length) +
                                                  " must be longer than the prefix of " +
                                                  range.str() + " and at most /" +
                                                  std::to_string(bits));
    if (length - range.length() > kMaxSliceBits)
        return makeError(Errc::InvalidConfig, "slice size /" + std::to_string(length) + " cuts " +
                                                  range.str() + " into more than " +
                                                  std::to_string(kMaxNodeSlices) + " slices");
    const size_t n = size_t(1) << (length - range.length());
    const u128 step = u128(1) << (bits - length);
    std::vector<Cidr> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) out.emplace_back(range.at(step * i), length);
    return out;
}

Result<SlicePlan> planSlices(const SliceInput& in, const SliceBusy& busy) {
    auto carved = carveSlices(in.range, in.sliceLength);
    if (!carved) return carved.error();
    Sorted s = sortCurrent(in, busy);
    const std::vector<Span> blocked = s.blocked();

    std::vector<std::string> waiting;  // live Nodes without a slice, by name
    for (const auto& n : std::set<std::string>(in.nodes.begin(), in.nodes.end()))
        if (!s.holders.count(n)) waiting.push_back(n);

    // Address order: kept slices and free cuts interleaved.
    std::map<std::pair<u128, int>, SliceAllocation> byAddress;
    for (const auto& k : s.kept) byAddress[{k.slice.network().value(), k.slice.length()}] = k.entry;
    size_t next = 0;
    for (const auto& c : *carved) {
        if (overlapsAny(blocked, spanOf(c))) continue;
        SliceAllocation a{next < waiting.size() ? waiting[next++] : "", c.str()};
        byAddress[{c.network().value(), c.length()}] = std::move(a);
    }
    SlicePlan plan;
    for (auto& [key, a] : byAddress) {
        plan.free += a.nodeName.empty();
        plan.allocations.push_back(std::move(a));
    }
    plan.total = plan.allocations.size();
    plan.unassigned.assign(waiting.begin() + static_cast<std::ptrdiff_t>(next), waiting.end());
    for (auto& e : s.stale) plan.allocations.push_back(std::move(e));
    return plan;
}

namespace {

bool startsWith(const std::string& s, const std::string& head) {
    return s.size() > head.size() && s.compare(0, head.size(), head) == 0;
}

// The node a slice pool's name head ([prefix-]node) gives for network name `network`, or ""
// when it gives none: an unprefixed head must name a known node, so that a plain pool
// ([network_name-]range) whose range lies in a NodeSlicePool's is not taken for a slice pool.
std::string nodeOfHead(const std::string& head, const std::string& network,
                       const std::function<bool(const std::string&)>& knownNode) {
    const bool known = knownNode && knownNode(head);
    if (!startsWith(head, network + "-")) return known ? head : "";
    std::string withoutPrefix = head.substr(network.size() + 1);
    if (known && !knownNode(withoutPrefix)) return head;
    return withoutPrefix;
}

SlicePoolInfo infoFor(const NodeSliceView& nsp, std::string node, const Cidr& range) {
    SlicePoolInfo out{nsp.name, std::move(node), {}, ""};
    for (const auto& a : nsp.allocations) {
        auto slice = Cidr::parse(a.sliceRange);
        if (!slice) continue;
        if (a.nodeName == out.node) out.nodeSlices.push_back(*slice);
        if (*slice == range) out.rangeHolder = a.nodeName;
    }
    return out;
}

}  // namespace

std::optional<SlicePoolInfo> slicePoolOf(const std::vector<NodeSliceView>& nodeSlicePools,
                                         const std::string& name, const Cidr& range,
                                         const std::function<bool(const std::string&)>& knownNode) {
    // A slice's part k (node_slice_parts) is that node's slice pool as much as part 0.
    const std::string pool = slicePartOf(name).first;
    const std::string suffix = "-" + normalizeRange(range.str());
    if (pool.size() <= suffix.size() ||
        pool.compare(pool.size() - suffix.size(), suffix.size(), suffix) != 0)
        return std::nullopt;
    const std::string head = pool.substr(0, pool.size() - suffix.size());
    for (const auto& nsp : nodeSlicePools) {
        auto whole = Cidr::parse(nsp.range);
        if (!whole || !inside(*whole, range) || range.length() == whole->length()) continue;
        // A dual-stack range's NodeSlicePool is network-<normalized range>.
        std::string network = nsp.name;
        const std::string rangeSuffix = "-" + normalizeRange(whole->str());
        if (network.size() > rangeSuffix.size() &&
            network.compare(network.size() - rangeSuffix.size(), rangeSuffix.size(), rangeSuffix) ==
                0)
            network.resize(network.size() - rangeSuffix.size());
        std::string node = nodeOfHead(head, network, knownNode);
        if (!node.empty()) return infoFor(nsp, std::move(node), range);
    }
    return std::nullopt;
}

namespace {

constexpr size_t kRefusalNamed = 8;  // NADs a refusal names; the rest are counted

std::string whatItAsks(const SlicePartsAsk& a, int parts) {
    std::string out = "NetworkAttachmentDefinition " + a.nad + " (" + a.type + ")";
    if (a.parts != parts)
        out += " asks for node_slice_parts " + std::to_string(a.parts) +
               (a.type == "whereabouts" && a.parts == 1 ? " (Whereabouts reads only part 0)" : "");
    if (!a.reservations)
        out +=
            std::string(a.parts != parts ? " and" : "") + " sets enable_overlapping_ranges false";
    return out;
}

}  // namespace

std::optional<SlicePartsRefusal> refuseSliceParts(const std::vector<SlicePartsAsk>& asks) {
    int parts = 1;
    for (const auto& a : asks) parts = std::max(parts, a.parts);
    if (parts == 1) return std::nullopt;
    SlicePartsRefusal out;
    std::string named;
    for (size_t i = 0; i < asks.size(); ++i) {
        if (asks[i].parts == parts && asks[i].reservations) continue;
        if (out.offenders.size() < kRefusalNamed)
            named += (named.empty() ? "" : "; ") + whatItAsks(asks[i], parts);
        out.offenders.push_back(i);
    }
    if (out.offenders.empty()) return std::nullopt;
    if (out.offenders.size() > kRefusalNamed)
        named += "; and " + std::to_string(out.offenders.size() - kRefusalNamed) + " more";
    out.message = "every NAD of the network must ask for node_slice_parts " +
                  std::to_string(parts) + " and keep enable_overlapping_ranges: " + named;
    return out;
}

}  // namespace allot::core
