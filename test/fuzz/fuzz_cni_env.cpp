// CNI_ARGS and the CNI_* environment: a parse yields valid values or a BadEnvironment error.
#include <cstdlib>
#include <string>

#include "plugin/cni_env.h"

using namespace allot;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    auto a = plugin::parseCniArgs(text);
    if (!a && a.code() != core::Errc::BadEnvironment) std::abort();
    // Split the input into the variables a runtime sets.
    std::string parts[5];
    int k = 0;
    for (char c : text) {
        if (c == '\n' && k < 4)
            ++k;
        else
            parts[k] += c;
    }
    plugin::EnvMap env{{"CNI_COMMAND", parts[0]},
                       {"CNI_CONTAINERID", parts[1]},
                       {"CNI_IFNAME", parts[2]},
                       {"CNI_NETNS", parts[3]},
                       {"CNI_ARGS", parts[4]}};
    auto e = plugin::parseEnv(env);
    if (e) {
        bool attach = e->command == plugin::Command::Add || e->command == plugin::Command::Del ||
                      e->command == plugin::Command::Check;
        if (attach &&
            (!plugin::validContainerId(e->containerId) || !plugin::validIfName(e->ifName)))
            std::abort();
    } else if (e.code() != core::Errc::BadEnvironment) {
        std::abort();
    }
    return 0;
}
