// spec.config of a NetworkAttachmentDefinition (anyone who can create one in their namespace
// writes it), as allot-gc decodes it to find the pools of a deleted pod's networks: a parse
// yields only owned, valid IPAM configurations (ranges inside their CIDRs, at most kMaxRanges,
// a pool namespace that is a namespace name), or a Decode / InvalidConfig error whose message
// is one short printable line (it is logged). Without owned types nothing is ever decoded
// beyond the outer shape.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cluster/nad.h"

using namespace allot;

namespace {

constexpr size_t kMaxMessage = 1024;

void require(bool ok) {
    if (!ok) std::abort();
}

void cleanMessage(const core::Error& e) {
    require(!e.message.empty() && e.message.size() <= kMaxMessage);
    for (unsigned char c : e.message) require(c >= 0x20 && c != 0x7f);
}

bool dnsLabel(const std::string& s) {
    if (s.empty() || s.size() > 63) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return s.front() != '-' && s.back() != '-';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::vector<std::string> owned{"allot", "whereabouts"};
    // No flat file: a fuzzer must not depend on the machine's /etc.
    auto r = cluster::parseNadConfig(text, owned, {});
    if (!r) {
        require(r.code() == core::Errc::Decode || r.code() == core::Errc::InvalidConfig);
        cleanMessage(r.error());
    } else {
        require(text.size() <= cluster::kMaxNadConfigBytes);
        require(r->size() * 8 <= text.size());  // each owned section spells "ipam" and a type
        for (const auto& n : *r) {
            const auto& c = n.config;
            require(std::find(owned.begin(), owned.end(), c.raw.type) != owned.end());
            require(c.ranges.size() <= static_cast<size_t>(core::kMaxRanges));
            for (const auto& range : c.ranges) {
                require(!(range.end() < range.start()));
                require(range.cidr().contains(range.start()) && range.cidr().contains(range.end()));
            }
            // The pool namespace goes into request paths.
            require(c.raw.poolNamespace.empty() || dnsLabel(c.raw.poolNamespace));
        }
    }
    // Owning nothing: only the outer shape is looked at, so no IPAM error can come out.
    auto none = cluster::parseNadConfig(text, {}, {});
    if (!none) {
        require(none.code() == core::Errc::Decode);
        cleanMessage(none.error());
        require(!r && r.code() == core::Errc::Decode);
    } else {
        require(none->empty());
    }
    return 0;
}
