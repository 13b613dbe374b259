// allot: the CNI IPAM plugin. Everything but the wiring lives in the allot_plugin library.
#include <iostream>

#include "cni/net_config.h"
#include "plugin/wiring.h"

extern char** environ;

int main() {
    allot::plugin::EnvMap env;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
    // Read at most one byte over the limit: parseNetConf then rejects it, naming the limit,
    // without the whole of an endless stdin in memory first.
    std::string input;
    char buf[64 * 1024];
    while (input.size() <= allot::cni::kMaxConfigBytes &&
           std::cin.read(buf, sizeof buf).gcount() > 0)
        input.append(buf, static_cast<size_t>(std::cin.gcount()));
    if (input.size() > allot::cni::kMaxConfigBytes + 1)
        input.resize(allot::cni::kMaxConfigBytes + 1);
    auto out = allot::plugin::runProduction(env, input);
    std::cout << out.stdoutText << std::flush;
    return out.exitCode;
}
