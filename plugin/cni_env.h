#pragma once
// The CNI environment contract: CNI_COMMAND and friends, and CNI_ARGS.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ip.h"
#include "core/result.h"

namespace allot::plugin {

using core::Result;

enum class Command { Add, Del, Check, Gc, Status, Version };

struct CniArgs {
    std::string podName;
    std::string podNamespace;
    std::string podUid;
    std::string infraContainerId;
    // IP=a,b as given: parsed (parseArgIps) only by ADD, and only when the network config
    // requests no address itself, so a malformed value never fails another verb.
    std::string ipText;
    // GATEWAY=a,b as given (Whereabouts' key): the gateway of each address of the ADD's result
    // inside whose network it lies. Parsed (parseArgGateways) only by ADD.
    std::string gatewayText;
    std::string podRef() const {
        return podName.empty() ? std::string() : podNamespace + "/" + podName;
    }
};

struct CniEnv {
    Command command = Command::Version;
    std::string commandName;
    std::string containerId;
    std::string netns;
    std::string ifName;
    std::string path;
    CniArgs args;
};

using EnvMap = std::map<std::string, std::string>;

// Reads the CNI_* variables and checks what the verb requires (CNI spec: ADD and CHECK need
// CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME; DEL needs CNI_CONTAINERID and CNI_IFNAME).
// Errors are BadEnvironment naming the variable.
Result<CniEnv> parseEnv(const EnvMap& env);

// "K=V;K2=V2", split on the first '='. Unknown keys are an error unless IgnoreUnknown is set.
Result<CniArgs> parseCniArgs(const std::string& text);

// The addresses of CNI_ARGS IP= (prefix lengths are accepted and ignored). BadEnvironment
// naming the value that is no address.
Result<std::vector<core::IpAddress>> parseArgIps(const std::string& text);
// GATEWAY=a,b: addresses, blanks around each allowed. InvalidEnvironment naming the value.
Result<std::vector<core::IpAddress>> parseArgGateways(const std::string& text);

bool validContainerId(const std::string& id);
bool validIfName(const std::string& name);

}  // namespace allot::plugin
