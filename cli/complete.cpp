// Shell completion. kubectl (1.26 and later) completes `kubectl allot ...` by running
// `kubectl_complete-allot` from PATH with the words typed so far; that script (shipped beside
// the binary) runs `kubectl-allot __complete WORDS...`, which prints one candidate per line
// and then cobra's directive line (":0" lets the shell complete file names, ":4" does not).
// `kubectl-allot completion bash` prints the same for the binary used on its own.
#include <map>
#include <set>

#include "cli/cli.h"

namespace allot::cli {

namespace {

constexpr int kFiles = 0, kNoFiles = 4;

const std::vector<std::string> kCommands = {"pools",   "who",  "pod",    "check",
                                            "release", "lint", "version"};

const std::vector<std::string> kGlobalFlags = {
    "--kubeconfig", "--context", "--pool-namespace", "--output", "--request-timeout", "--help"};

const std::map<std::string, std::vector<std::string>>& commandFlags() {
    static const std::map<std::string, std::vector<std::string>> f = {
        {"pod", {"--namespace", "--all-namespaces"}},
        {"check", {"--namespace", "--all-namespaces", "--leak-grace"}},
        {"release", {"--force", "--dry-run", "--from-report", "--pool"}},
        {"lint", {"--offline"}},
        {"version", {"--client", "--lease-namespace"}},
    };
    return f;
}

std::string render(const std::vector<std::string>& all, const std::string& prefix, int directive) {
    std::string out;
    for (const auto& c : all)
        if (c.rfind(prefix, 0) == 0) out += c + "\n";
    return out + ":" + std::to_string(directive) + "\n";
}

}  // namespace

std::string completions(const std::vector<std::string>& words) {
    const std::string partial = words.empty() ? "" : words.back();
    const std::string previous = words.size() >= 2 ? words[words.size() - 2] : "";
    if (previous == "-o" || previous == "--output")
        return render({"table", "wide", "json", "yaml"}, partial, kNoFiles);
    if (previous == "--kubeconfig" || previous == "--from-report")
        return render({}, partial, kFiles);
    static const std::set<std::string> valued = {
        "--context", "-n",           "--namespace",       "--pool-namespace",
        "--pool",    "--leak-grace", "--request-timeout", "--lease-namespace"};
    if (valued.count(previous)) return render({}, partial, kNoFiles);
    std::string command;
    for (size_t i = 0; i + 1 < words.size() && command.empty(); ++i) {
        const bool isValue =
            i > 0 &&
            (valued.count(words[i - 1]) || words[i - 1] == "-o" || words[i - 1] == "--output" ||
             words[i - 1] == "--kubeconfig" || words[i - 1] == "--from-report");
        if (!words[i].empty() && words[i][0] != '-' && !isValue) command = words[i];
    }
    if (!partial.empty() && partial[0] == '-') {
        std::vector<std::string> flags = kGlobalFlags;
        if (auto it = commandFlags().find(command); it != commandFlags().end())
            flags.insert(flags.end(), it->second.begin(), it->second.end());
        return render(flags, partial, kNoFiles);
    }
    if (command.empty()) return render(kCommands, partial, kNoFiles);
    return render({}, partial, command == "lint" ? kFiles : kNoFiles);
}

std::string completionScript(const std::string& shell) {
    if (shell != "bash") return "";
    return R"(# bash completion for kubectl-allot: source <(kubectl-allot completion bash)
_kubectl_allot() {
    local out directive
    out=$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
    directive=${out##*:}
    out=${out%:*}
    COMPREPLY=($(compgen -W "$out" -- "${COMP_WORDS[COMP_CWORD]}"))
    if [[ ${#COMPREPLY[@]} -eq 0 && $directive == 0 ]]; then
        COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
    fi
}
complete -F _kubectl_allot kubectl-allot
)";
}

}  // namespace allot::cli
