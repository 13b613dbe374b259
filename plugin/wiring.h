#pragma once
// Production wiring: the Kubernetes store, file locks, pool cache, journal, netlink CHECK.

#include "plugin/plugin.h"

namespace allot::plugin {

Outcome runProduction(const EnvMap& env, std::string_view stdinText);

}  // namespace allot::plugin
