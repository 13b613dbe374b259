// Watch streams, truncated or garbled, in arbitrary chunks: every delivered line is at most
// the limit and parses to an event or a Decode error.
#include <cstdlib>
#include <string_view>

#include "k8s/watch.h"

using namespace allot;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    if (size < 1) return 0;
    size_t chunk = 1 + data[0] % 64;
    std::string_view all(reinterpret_cast<const char*>(data + 1), size - 1);
    k8s::LineSplitter s(256);
    auto onLine = [](std::string_view line) {
        if (line.size() > 256) std::abort();
        auto ev = k8s::parseWatchEvent(line);
        if (!ev && ev.code() != core::Errc::Decode) std::abort();
        if (ev && !ev->object.isObject()) std::abort();
        return true;
    };
    for (size_t off = 0; off < all.size(); off += chunk) {
        auto r = s.feed(all.substr(off, chunk), onLine);
        if (!r) return 0;
    }
    (void)s.finish(onLine);
    return 0;
}
