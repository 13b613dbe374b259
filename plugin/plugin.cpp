#include "plugin/plugin.h"

#include "engine/release.h"
#include "plugin/node_paths.h"
#include "plugin/verbs.h"
#include "version/version.h"

namespace allot::plugin {

using core::Errc;
using engine::Clock;

namespace {

std::string versionOf(std::string_view stdinText) {
    auto doc = json::parse(stdinText);
    if (doc && doc->isObject()) {
        if (const json::Value* v = doc->find("cniVersion"); v && v->isString())
            return v->asString();
    }
    return "";
}

// No store at all (a missing or unreadable kubeconfig, ...): DEL still must not block
// teardown. The release goes to the journal allot-gc replays with its own credentials.
Outcome journalDelWithoutStore(const CniEnv& e, const core::ValidatedConfig& cfg,
                               const cni::NetConf& net, Deps& deps, const core::Error& why,
                               const std::string& version) {
    auto journal = deps.makeJournal(cfg);
    std::string node = deps.nodeName ? deps.nodeName(cfg, net) : std::string();
    core::Owner owner{e.containerId, e.args.podRef(), e.ifName, node, e.args.podUid, net.name};
    auto j = engine::journalRelease(*journal, cfg, owner, cfg.raw.poolNamespace);
    if (!j)
        return failWith(
            version,
            core::makeError(Errc::Transient,
                            why.message + "; and the journal failed: " + j.error().message),
            deps.log);
    if (deps.log)
        deps.log->error(
            "DEL not finished (" + why.message + "); release journaled for allot-gc to replay",
            {.network = net.name});
    return Outcome{0, ""};
}

// The failure when the configured cniVersion does not serve this command; nullopt when it does.
std::optional<Outcome> checkVersion(const CniEnv& e, const std::string& version,
                                    const std::string& errVersion, logging::Logger* log) {
    if (!isSupportedVersion(version))
        return fail(errVersion,
                    {kIncompatibleVersion,
                     "cniVersion \"" + version + "\" is not supported (supported: 0.1.0 to 1.1.0)"},
                    log);
    if (e.command == Command::Check && compareVersions(version, "0.4.0") < 0)
        return fail(version,
                    {kIncompatibleVersion, "CHECK needs cniVersion 0.4.0 or later, got " + version},
                    log);
    if ((e.command == Command::Gc || e.command == Command::Status) &&
        compareVersions(version, "1.1.0") < 0)
        return fail(version,
                    {kIncompatibleVersion,
                     e.commandName + " needs cniVersion 1.1.0 or later, got " + version},
                    log);
    return std::nullopt;
}

// Level, format and log_file from the config, then the warnings collected while reading it.
void configureLog(logging::Logger* log, const core::ValidatedConfig& cfg, const cni::NetConf& net,
                  const NodeRoots& roots) {
    if (!log) return;
    log->setLevel(logging::parseCniLevel(cfg.raw.logLevel));
    log->setFormat(net.jsonLogs ? logging::Format::Json : logging::Format::Text);
    if (!cfg.raw.logFile.empty()) {
        if (auto ok = checkLogFile(cfg.raw.logFile, roots); !ok)
            log->error(ok.error().message + "; logging to stderr");
        else if (!log->open(cfg.raw.logFile))
            log->error("log_file \"" + cfg.raw.logFile +
                       "\" cannot be opened as a regular file (a symlink, a FIFO, or a missing "
                       "directory); logging to stderr");
    }
    for (const auto& w : net.warnings) log->warning(w);
    for (const auto& w : cfg.warnings) log->warning(w);
}

// The failure when a node path of the config is outside the allowed roots; nullopt when all are
// inside, or for DEL, which then drops them.
std::optional<Outcome> applyNodePaths(const CniEnv& e, core::ValidatedConfig& cfg,
                                      const NodeRoots& roots, const std::string& version,
                                      logging::Logger* log) {
    auto ok = checkNodePaths(cfg.raw, roots);
    if (ok) return std::nullopt;
    // DEL must not block teardown: it releases through allot's own directories instead.
    if (e.command != Command::Del) return failWith(version, ok.error(), log);
    if (log) log->error(ok.error().message + "; DEL uses allot's own directories instead");
    cfg.raw.lockDir.clear();
    cfg.raw.journalDir.clear();
    cfg.raw.relaySocket.clear();
    return std::nullopt;
}

Clock::time_point deadlineFor(Command command, const core::ValidatedConfig& cfg) {
    int budgetMs = cfg.raw.deadlineMs > 0 ? cfg.raw.deadlineMs : core::kDefaultDeadlineMs;
    if (command == Command::Del) budgetMs = std::min(budgetMs, kDelDeadlineMs);
    if (command == Command::Status) budgetMs = std::min(budgetMs, kStatusTimeoutMs);
    return Clock::now() + std::chrono::milliseconds(budgetMs);
}

}  // namespace

std::optional<Outcome> answerWithoutStdin(const std::vector<std::string>& args, const EnvMap& env) {
    if (!args.empty() && args[0] == "--version") return Outcome{0, versionLine("allot") + "\n"};
    if (auto c = env.find("CNI_COMMAND"); c != env.end() && !c->second.empty()) return std::nullopt;
    std::string versions;
    for (const auto& v : supportedVersions()) versions += (versions.empty() ? "" : ", ") + v;
    return Outcome{0, "",
                   "CNI " + versionLine("allot plugin") +
                       "\nCNI protocol versions supported: " + versions + "\n"};
}

Outcome run(const EnvMap& env, std::string_view stdinText, Deps& deps) {
    const auto started = Clock::now();
    logging::Logger* log = deps.log;
    auto parsedEnv = parseEnv(env);
    const std::string guessedVersion = versionOf(stdinText);
    const std::string errVersion = guessedVersion.empty() ? "1.1.0" : guessedVersion;
    if (!parsedEnv) return failWith(errVersion, parsedEnv.error(), log);
    CniEnv& e = *parsedEnv;
    if (log) log->setContext(e.containerId, e.args.podRef());

    if (e.command == Command::Version) {
        std::string v = guessedVersion.empty() ? "1.1.0" : guessedVersion;
        return Outcome{0, formatVersionInfo(v) + "\n"};
    }

    auto net = cni::parseNetConf(stdinText, deps.flatFiles);
    if (!net) return failWith(errVersion, net.error(), log);
    const std::string& version = net->cniVersion;
    if (auto failed = checkVersion(e, version, errVersion, log)) return *failed;

    auto cfg = core::validate(net->ipam);
    if (!cfg) return failWith(version, cfg.error(), log);
    // Paths from the network config are honoured only inside the node's allowed roots.
    const NodeRoots roots = nodeRoots(deps.flatFiles);
    configureLog(log, *cfg, *net, roots);
    if (auto failed = applyNodePaths(e, *cfg, roots, version, log)) return *failed;

    const auto deadline = deadlineFor(e.command, *cfg);
    auto handle = deps.makeStore(*cfg, deadline);
    if (!handle) {
        if (e.command == Command::Status)
            return fail(version, cniError(handle.error(), Command::Status), log);
        if (e.command == Command::Del && deps.makeJournal)
            return journalDelWithoutStore(e, *cfg, *net, deps, handle.error(), version);
        return failWith(version, handle.error(), log);
    }
    auto locker = deps.makeLocker ? deps.makeLocker(*cfg) : nullptr;
    auto journal = deps.makeJournal ? deps.makeJournal(*cfg) : nullptr;
    auto cache = deps.makeCache ? deps.makeCache(*cfg) : nullptr;
    auto queue = deps.makeQueue ? deps.makeQueue(*cfg) : nullptr;
    auto marks = deps.makeAddMarks ? deps.makeAddMarks() : nullptr;
    engine::Context ctx(*handle->store);
    ctx.marks = marks.get();
    ctx.locker = locker.get();
    ctx.journal = journal.get();
    ctx.cache = cache.get();
    ctx.queue = queue.get();
    ctx.node = deps.nodeName ? deps.nodeName(*cfg, *net) : std::string();
    ctx.poolNamespace = handle->poolNamespace;
    ctx.deadline = deadline;
    ctx.sleep = deps.sleep;

    core::Owner owner{e.containerId, e.args.podRef(), e.ifName, ctx.node, e.args.podUid, net->name};
    Outcome out =
        dispatch(ctx, Request{e, *cfg, *net, owner, version, log, handle->claims.get()}, deps);
    for (const auto& w : ctx.report.warnings) log->warn(w);
    out.conflicts = ctx.report.conflicts;
    out.served = ctx.report.served;
    if (handle->report && (e.command == Command::Add || e.command == Command::Del))
        handle->report(CallReport{
            e.command == Command::Add ? "ADD" : "DEL",
            out.exitCode == 0 ? "ok" : "cni_" + std::to_string(out.exitCode), net->name,
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started)});
    return out;
}

}  // namespace allot::plugin
