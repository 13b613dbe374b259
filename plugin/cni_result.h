#pragma once
// CNI versions, results shaped per version, error objects and error codes.

#include <optional>
#include <string>
#include <vector>

#include "core/ip.h"
#include "core/result.h"
#include "engine/context.h"
#include "json/json.h"
#include "plugin/cni_env.h"

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

// How a call failed, as the CNI spec's error object says it.
struct CniError {
    int code = kInternal;
    std::string msg;      // what failed, naming the key, object or value
    std::string details;  // the kind of failure and what the caller can do ("" = none)
};

// The one mapping of allot's errors to CNI errors. The code is the spec's table: 7 for
// configuration (a named object that does not exist included), 4 environment, 6 decode,
// 11 try again (a pool object too large for etcd included), 100 a range with no free address,
// 101 access denied, 103 the rest. `details` holds the whole message, the kind of failure and
// what helps. For a command, its exceptions: CHECK reports a missing allocation as 102 (check
// failed), STATUS any failure as 50 (plugin not available).
CniError cniError(const core::Error& e);
CniError cniError(const core::Error& e, Command command);

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
std::string formatError(const std::string& version, const CniError& e);
std::string formatVersionInfo(const std::string& version);

// Addresses listed in a prevResult of any version (ips[] or ip4/ip6).
std::vector<engine::IpResult> prevResultIps(const json::Value& prevResult);

}  // namespace allot::plugin
