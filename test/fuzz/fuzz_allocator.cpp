// The allocator over arbitrary pool contents never returns an address outside the range, an
// excluded one, the gateway, or one already taken.
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/allocator.h"

using namespace allot::core;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    if (size < 8) return 0;
    bool v6 = data[0] & 1;
    int prefix = v6 ? 104 + data[1] % 25 : 20 + data[1] % 13;
    std::string cidr =
        v6 ? "fd00::/" + std::to_string(prefix) : "10.0.0.0/" + std::to_string(prefix);
    RangeSpec spec{cidr, "", "", {}};
    auto base = Cidr::parse(cidr);
    u128 span = base->last().value() - base->first().value();
    auto at = [&](unsigned char a, unsigned char b) {
        return base->at(span == 0 ? 0 : (u128(a) << 8 | b) % (span + 1)).str();
    };
    if (data[2] & 1) spec.rangeStart = at(data[3], data[4]);
    if (data[2] & 2) spec.exclude.push_back(at(data[5], data[6]) + (v6 ? "/126" : "/30"));
    auto range = IpRange::fromSpec(spec, "range");
    if (!range) return 0;
    std::optional<IpAddress> gw;
    if (data[2] & 4) gw = range->start();
    AllocationMap m;
    size_t i = 8;
    for (; i + 2 <= size && i < 8 + 2 * 64; i += 2) {
        u128 off = span == 0 ? 0 : (u128(data[i]) << 8 | data[i + 1]) % (span + 1);
        m[off] = Owner{"pre" + std::to_string(i), "", "eth0", "", "", ""};
    }
    for (int n = 0; n < 64; ++n) {
        AllocationMap before = m;
        std::optional<IpAddress> req;
        if (i < size && (data[i] & 0x80))
            req = range->cidr().at(span == 0 ? 0 : data[i] % (span + 1));
        auto p = pick(*range, m, {Owner{"c" + std::to_string(n), "", "eth0", "", "", ""}, req, gw});
        if (!p) {
            if (m != before) std::abort();  // a refusal changes nothing
            if (p.code() == Errc::Exhausted) break;
            continue;
        }
        if (!range->allocatable(p->ip) || (gw && p->ip == *gw) || before.count(p->offset))
            std::abort();
        if (range->cidr().at(p->offset) != p->ip) std::abort();
    }
    return 0;
}
