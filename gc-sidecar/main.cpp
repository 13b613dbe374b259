// allot-gc: the reclamation sidecar. Everything but argument handling lives in allot_gc.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "gc-sidecar/daemon/config.h"
#include "gc-sidecar/daemon/daemon.h"
#include "version/version.h"

namespace {

int start(int argc, char** argv) {
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

}  // namespace

// A throw that no library caught (std::bad_alloc, say) ends allot-gc with its message and
// status 1 rather than abort().
int main(int argc, char** argv) {
    try {
        return start(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "allot-gc: %s\n", e.what());
    } catch (...) {
        std::fputs("allot-gc: an unknown exception\n", stderr);
    }
    return 1;
}
