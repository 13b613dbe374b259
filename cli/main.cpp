// kubectl-allot: kubectl finds it on PATH as `kubectl allot`. Everything but this file is the
// allot_cli library, which the unit tests link.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"

int main(int argc, char** argv) {
    using namespace allot::cli;
    std::vector<std::string> args(argv + 1, argv + argc);
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
