// IPPool / OverlappingRangeIPReservation JSON as the API server returns it: decoding yields a
// pool or an Invalid error; a decoded pool re-encodes stably.
#include <cstdlib>
#include <string_view>

#include "json/json.h"
#include "store/pool_codec.h"

using namespace allot;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    auto v = json::parse(std::string_view(reinterpret_cast<const char*>(data), size));
    if (!v) return 0;
    if (auto p = store::decodePool(*v)) {
        std::string once = store::encodePool(*p, "ns").dump();
        auto back = store::decodePool(*json::parse(once));
        if (!back || back->allocations != p->allocations || back->range != p->range) std::abort();
        if (store::encodePool(*back, "ns").dump() != once) std::abort();
    } else if (p.code() != core::Errc::Invalid) {
        std::abort();
    }
    if (auto r = store::decodeReservation(*v)) {
        auto back = store::decodeReservation(store::encodeReservation(*r, "ns"));
        if (!back || back->podRef != r->podRef || back->containerId != r->containerId) std::abort();
    }
    return 0;
}
