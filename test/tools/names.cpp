// allot-names: prints the object names allot derives, so that test scripts (shell and Python)
// ask the product instead of re-deriving Whereabouts' naming rules themselves.
//
//   allot-names pool CIDR [NETWORK_NAME [NODE_NAME]]   IPPool name
//   allot-names reservation IP [NETWORK_NAME]          OverlappingRangeIPReservation name
//   allot-names part POOL_NAME K                        IPPool of part K of a node slice
//
// An empty NETWORK_NAME or NODE_NAME is the same as leaving it out. Exit 2 on a usage error
// or an address the product does not accept.

#include <cstdio>
#include <string>
#include <string_view>

#include "core/ip.h"
#include "core/naming.h"

namespace {

int usage() {
    std::fputs(
        "usage: allot-names pool CIDR [NETWORK_NAME [NODE_NAME]]\n"
        "       allot-names reservation IP [NETWORK_NAME]\n"
        "       allot-names part POOL_NAME K\n",
        stderr);
    return 2;
}

int fail(const std::string& message) {
    std::fprintf(stderr, "allot-names: %s\n", message.c_str());
    return 2;
}

std::string argOr(int argc, char** argv, int i) {
    return i < argc ? argv[i] : "";
}

}  // namespace

int main(int argc, char** argv) {
    using namespace allot::core;
    if (argc < 3) return usage();
    const std::string_view verb = argv[1];
    if (verb == "pool" && argc <= 5) {
        auto range = Cidr::parse(argv[2], "range");
        if (!range) return fail(range.error().message);
        std::printf("%s\n", poolName(*range, argOr(argc, argv, 3), argOr(argc, argv, 4)).c_str());
        return 0;
    }
    if (verb == "part" && argc == 4) {
        const std::string k = argv[3];
        if (k.empty() || k.size() > 2 || k.find_first_not_of("0123456789") != std::string::npos)
            return fail("part " + k + " is not a number");
        std::printf("%s\n", slicePartPoolName(argv[2], std::stoi(k)).c_str());
        return 0;
    }
    if (verb == "reservation" && argc <= 4) {
        auto ip = IpAddress::parse(argv[2]);
        if (!ip) return fail(ip.error().message);
        std::printf("%s\n", reservationName(*ip, argOr(argc, argv, 3)).c_str());
        return 0;
    }
    return usage();
}
