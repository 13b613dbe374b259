#pragma once
// The CNI verbs over the engine: each turns one parsed call into the engine's call, and its
// answer into the CNI result or error, logging what it did.

#include <string>

#include "engine/context.h"
#include "log/log.h"
#include "plugin/plugin.h"

namespace allot::plugin {

// What one command needs besides the engine context.
struct Request {
    const CniEnv& env;
    const core::ValidatedConfig& cfg;
    const cni::NetConf& net;
    const core::Owner& owner;
    const std::string& version;
    logging::Logger* log;
    engine::IpamClaimApi* claims = nullptr;
};

// ADD, DEL, CHECK, GC or STATUS (VERSION needs no engine).
Outcome dispatch(engine::Context& ctx, const Request& q, const Deps& deps);

// A CNI error answer in `version`'s shape, its msg logged once.
Outcome fail(const std::string& version, const CniError& e, logging::Logger* log);
// The same for an allot error, mapped as cniError(e) does.
Outcome failWith(const std::string& version, const core::Error& e, logging::Logger* log);

}  // namespace allot::plugin
