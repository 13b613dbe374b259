// CNI stdin (single config or anything else): a parse yields a valid config or a clear error;
// a valid config's ranges are inside their CIDRs with start <= end (a range may have no free
// address: Whereabouts accepts one whose excludes cover it and fails each ADD).
#include <cstdlib>
#include <string_view>

#include "cni/net_config.h"
#include "core/config.h"

using namespace allot;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto n = cni::parseNetConf(text, {});
    if (!n) {
        if (n.error().message.empty()) std::abort();
        return 0;
    }
    auto v = core::validate(n->ipam);
    if (!v) {
        if (v.error().message.empty() || v.code() != core::Errc::InvalidConfig) std::abort();
        return 0;
    }
    for (const auto& r : v->ranges) {
        if (r.end() < r.start() || !r.cidr().contains(r.start()) || !r.cidr().contains(r.end()))
            std::abort();
    }
    return 0;
}
