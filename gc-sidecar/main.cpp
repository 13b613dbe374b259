// allot-gc: the reclamation sidecar. Everything but argument handling lives in allot_gc.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gc-sidecar/daemon/config.h"
#include "gc-sidecar/daemon/daemon.h"
#include "version/version.h"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    auto parsed =
        allot::gc::parseArgs(args, [](const std::string& name) -> std::optional<std::string> {
            const char* v = std::getenv(name.c_str());
            if (!v) return std::nullopt;
            return std::string(v);
        });
    if (!parsed) {
        std::fprintf(stderr, "allot-gc: %s\n", parsed.error().message.c_str());
        return 2;
    }
    if (parsed->help) {
        std::fputs(allot::gc::usage().c_str(), stdout);
        return 0;
    }
    if (parsed->version) {
        std::puts(allot::versionLine("allot-gc").c_str());
        return 0;
    }
    return allot::gc::runDaemon(parsed->config);
}
