// allot: the CNI IPAM plugin. Everything but the wiring lives in the allot_plugin library.
#include <iostream>

#include "cni/net_config.h"
#include "plugin/wiring.h"

extern char** environ;

int main(int argc, char** argv) {
    allot::plugin::EnvMap env;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
    // --version and a call without CNI_COMMAND are answered before stdin is read: a person at
    // a terminal would otherwise wait for input.
    if (auto answer = allot::plugin::answerWithoutStdin(
            std::vector<std::string>(argv + 1, argv + argc), env)) {
        std::cout << answer->stdoutText << std::flush;
        std::cerr << answer->stderrText << std::flush;
        return answer->exitCode;
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
