// allot: the CNI IPAM plugin. Everything but the wiring lives in the allot_plugin library.
#include <iostream>
#include <iterator>

#include "plugin/wiring.h"

extern char** environ;

int main() {
    allot::plugin::EnvMap env;
    for (char** e = environ; *e; ++e) {
        std::string kv = *e;
        auto eq = kv.find('=');
        if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
    std::string input{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    auto out = allot::plugin::runProduction(env, input);
    std::cout << out.stdoutText << std::flush;
    return out.exitCode;
}
