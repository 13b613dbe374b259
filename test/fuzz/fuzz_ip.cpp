// IP and CIDR text: a parse yields a value whose canonical text parses back to itself.
#include <cstdlib>
#include <string_view>

#include "core/ip.h"

using namespace allot::core;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto ip = IpAddress::parse(text)) {
        auto again = IpAddress::parse(ip->str());
        if (!again || !(*again == *ip)) std::abort();
    }
    if (auto c = Cidr::parse(text)) {
        auto again = Cidr::parse(c->str());
        if (!again || !(*again == *c) || !c->contains(c->first()) || !c->contains(c->last()))
            std::abort();
    }
    // Go's grammars (Whereabouts' literals): whatever they read, canonical text reads back the
    // same.
    for (IpSyntax syn : {IpSyntax::Strict, IpSyntax::Sloppy}) {
        if (auto ip = parseGoIp(text, syn)) {
            auto again = parseGoIp(ip->str(), IpSyntax::Strict);
            if (!again || !(*again == *ip)) std::abort();
        }
        if (auto c = parseGoCidr(text, syn)) {
            auto again = parseGoCidr(c->net.str(), IpSyntax::Strict);
            if (!again || !(again->net == c->net)) std::abort();
        }
    }
    if (auto v = u128FromString(text)) {
        if (*u128FromString(u128ToString(*v)) != *v) std::abort();
    }
    return 0;
}
