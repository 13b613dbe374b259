#pragma once
// CNI versions, results shaped per version, error objects and error codes.

#include <optional>
#include <string>
#include <vector>

#include "core/ip.h"
#include "core/result.h"
#include "engine/context.h"
#include "json/json.h"

namespace allot::plugin {

// CNI error codes (spec "Error" section); 100+ are allot's own.
enum CniCode : int {
    kIncompatibleVersion = 1,
    kUnsupportedField = 2,
    kContainerUnknown = 3,
    kInvalidEnvironment = 4,
    kIoFailure = 5,
    kDecodeFailure = 6,
    kInvalidNetworkConfig = 7,
    kTryAgainLater = 11,
    kPluginNotAvailable = 50,
    kAddressesExhausted = 100,
    kAccessDenied = 101,
    kCheckFailed = 102,
    kInternal = 103,
};

// The spec's table: 7 for configuration (a named object that does not exist included: only
// CHECK reports a missing allocation as 102), 4 environment, 6 decode, 11 try again, 100+ ours.
int cniCodeFor(core::Errc code);
// The error object's "details": the whole message, what kind of failure it is and what the
// caller can do about it (the spec's longer text beside "msg").
std::string errorDetails(const core::Error& e);

const std::vector<std::string>& supportedVersions();
bool isSupportedVersion(const std::string& v);
// Orders "major.minor.patch" strings; unparsable parts compare as 0.
int compareVersions(const std::string& a, const std::string& b);

struct CniResult {
    std::vector<engine::IpResult> ips;
    json::Value routes;  // list of {dst, gw, ...} or null
    json::Value dns;     // object or null
};

// The result in `version`'s shape: 0.1.0/0.2.0 use ip4/ip6; 0.3.x/0.4.0 add ips[].version;
// 1.x omit it. No "interfaces" and no ips[].interface: an IPAM plugin does not make links.
std::string formatResult(const CniResult& r, const std::string& version);
std::string formatError(const std::string& version, int code, const std::string& msg,
                        const std::string& details = "");
std::string formatVersionInfo(const std::string& version);

// Addresses listed in a prevResult of any version (ips[] or ip4/ip6).
std::vector<engine::IpResult> prevResultIps(const json::Value& prevResult);

}  // namespace allot::plugin
