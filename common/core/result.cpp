#include "core/result.h"

namespace allot::core {

const char* errcName(Errc code) {
    switch (code) {
        case Errc::InvalidConfig:
            return "InvalidConfig";
        case Errc::BadEnvironment:
            return "BadEnvironment";
        case Errc::Decode:
            return "Decode";
        case Errc::NotFound:
            return "NotFound";
        case Errc::Conflict:
            return "Conflict";
        case Errc::AlreadyExists:
            return "AlreadyExists";
        case Errc::Invalid:
            return "Invalid";
        case Errc::Expired:
            return "Expired";
        case Errc::Exhausted:
            return "Exhausted";
        case Errc::TooLarge:
            return "TooLarge";
        case Errc::SliceSealed:
            return "SliceSealed";
        case Errc::SliceMoved:
            return "SliceMoved";
        case Errc::SliceAwaited:
            return "SliceAwaited";
        case Errc::Transient:
            return "Transient";
        case Errc::Unauthorized:
            return "Unauthorized";
        case Errc::Forbidden:
            return "Forbidden";
        case Errc::Unsupported:
            return "Unsupported";
        case Errc::Internal:
            return "Internal";
    }
    return "Unknown";
}

}  // namespace allot::core
