#include "version/version.h"

#include "revision.h"  // generated: ALLOT_REVISION

namespace allot {

std::string_view version() {
    return ALLOT_VERSION;
}

std::string_view revision() {
    return ALLOT_REVISION;
}

std::string versionLine(std::string_view program) {
    return std::string(program) + " " + std::string(version()) + " (revision " +
           std::string(revision()) + ")";
}

}  // namespace allot
