// kubectl-allot: kubectl finds it on PATH as `kubectl allot`. Everything but this file is the
// allot_cli library, which the unit tests link.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace {

int start(int argc, char** argv) {
    using namespace allot::cli;
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args[0] == "__complete") {
        std::cout << completions({args.begin() + 1, args.end()});
        return kExitOk;
    }
    if (args.size() == 2 && args[0] == "completion") {
        const std::string script = completionScript(args[1]);
        if (script.empty()) std::cerr << "error: completion: only \"bash\" is supported\n";
        std::cout << script;
        return script.empty() ? kExitUsage : kExitOk;
    }
    auto opts = parseArgs(args);
    if (!opts) {
        std::cerr << "error: " << opts.error().message
                  << "\nSee 'kubectl allot --help' (or 'kubectl allot COMMAND --help').\n";
        return kExitUsage;
    }
    if (opts->help) {
        std::cout << helpText(opts->command);
        return kExitOk;
    }
    return run(*opts, std::cout, std::cerr);
}

}  // namespace

// A throw that no library caught (std::bad_alloc, say) ends with its message and status 1
// rather than abort().
int main(int argc, char** argv) {
    try {
        return start(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
    } catch (...) {
        std::fputs("error: an unknown exception\n", stderr);
    }
    return 1;
}
