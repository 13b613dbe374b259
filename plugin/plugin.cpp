#include "plugin/plugin.h"

#include "plugin/node_paths.h"

namespace allot::plugin {

using core::Errc;

namespace {

Outcome fail(const std::string& version, int code, const std::string& msg, logging::Logger* log,
             const std::string& details = "") {
    if (log) log->error(msg);
    return Outcome{code, formatError(version, code, msg, details) + "\n"};
}

Outcome failWith(const std::string& version, const core::Error& e, logging::Logger* log) {
    return fail(version, cniCodeFor(e.code), e.message, log, errorDetails(e));
}

std::string versionOf(std::string_view stdinText) {
    auto doc = json::parse(stdinText);
    if (doc && doc->isObject()) {
        if (const json::Value* v = doc->find("cniVersion"); v && v->isString()) return v->asString();
    }
    return "";
}

// No store at all (a missing or unreadable kubeconfig, ...): DEL still must not block
// teardown. The release goes to the journal allot-gc replays with its own credentials.
Outcome journalDelWithoutStore(const CniEnv& e, const core::ValidatedConfig& cfg, const cni::NetConf& net,
                               Deps& deps, const core::Error& why, const std::string& version) {
    auto journal = deps.makeJournal(cfg);
    std::string node = deps.nodeName ? deps.nodeName(cfg, net) : std::string();
    core::Owner owner{e.containerId, e.args.podRef(), e.ifName, node, e.args.podUid, net.name};
    auto j = journalRelease(*journal, cfg, owner, cfg.raw.poolNamespace);
    if (!j)
        return failWith(version,
                        core::makeError(Errc::Transient, why.message + "; and the journal failed: " + j.error().message),
                        deps.log);
    if (deps.log) deps.log->error("DEL not finished (" + why.message + "); release journaled for allot-gc to replay");
    return Outcome{0, ""};
}

}  // namespace

Outcome run(const EnvMap& env, std::string_view stdinText, Deps& deps) {
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
    if (!isSupportedVersion(version))
        return fail(errVersion, kIncompatibleVersion,
                    "cniVersion \"" + version + "\" is not supported (supported: 0.1.0 to 1.1.0)", log);
    if (e.command == Command::Check && compareVersions(version, "0.4.0") < 0)
        return fail(version, kIncompatibleVersion, "CHECK needs cniVersion 0.4.0 or later, got " + version, log);
    if ((e.command == Command::Gc || e.command == Command::Status) && compareVersions(version, "1.1.0") < 0)
        return fail(version, kIncompatibleVersion,
                    e.commandName + " needs cniVersion 1.1.0 or later, got " + version, log);

    auto cfg = core::validate(net->ipam);
    if (!cfg) return failWith(version, cfg.error(), log);
    // Paths from the network config are honoured only inside the node's allowed roots.
    const NodeRoots roots = nodeRoots(deps.flatFiles);
    if (log) {
        log->setLevel(logging::parseCniLevel(cfg->raw.logLevel));
        if (!cfg->raw.logFile.empty()) {
            if (auto ok = checkLogFile(cfg->raw.logFile, roots); !ok)
                log->error(ok.error().message + "; logging to stderr");
            else if (!log->open(cfg->raw.logFile))
                log->error("log_file \"" + cfg->raw.logFile +
                           "\" cannot be opened as a regular file (a symlink, a FIFO, or a missing "
                           "directory); logging to stderr");
        }
        for (const auto& w : net->warnings) log->warning(w);
        for (const auto& w : cfg->warnings) log->warning(w);
    }
    if (auto ok = checkNodePaths(cfg->raw, roots); !ok) {
        // DEL must not block teardown: it releases through allot's own directories instead.
        if (e.command != Command::Del) return failWith(version, ok.error(), log);
        if (log) log->error(ok.error().message + "; DEL uses allot's own directories instead");
        cfg->raw.lockDir.clear();
        cfg->raw.journalDir.clear();
        cfg->raw.relaySocket.clear();
    }

    int budgetMs = cfg->raw.deadlineMs > 0 ? cfg->raw.deadlineMs : core::kDefaultDeadlineMs;
    if (e.command == Command::Del) budgetMs = std::min(budgetMs, kDelDeadlineMs);
    if (e.command == Command::Status) budgetMs = std::min(budgetMs, kStatusTimeoutMs);
    const auto deadline = Clock::now() + std::chrono::milliseconds(budgetMs);

    auto handle = deps.makeStore(*cfg, deadline);
    if (!handle) {
        if (e.command == Command::Status)
            return fail(version, kPluginNotAvailable, handle.error().message, log, errorDetails(handle.error()));
        if (e.command == Command::Del && deps.makeJournal)
            return journalDelWithoutStore(e, *cfg, *net, deps, handle.error(), version);
        return failWith(version, handle.error(), log);
    }
    auto locker = deps.makeLocker ? deps.makeLocker(*cfg) : nullptr;
    auto journal = deps.makeJournal ? deps.makeJournal(*cfg) : nullptr;
    auto cache = deps.makeCache ? deps.makeCache(*cfg) : nullptr;
    auto queue = deps.makeQueue ? deps.makeQueue(*cfg) : nullptr;
    EngineContext ctx(*handle->store);
    ctx.locker = locker.get();
    ctx.journal = journal.get();
    ctx.cache = cache.get();
    ctx.queue = queue.get();
    ctx.node = deps.nodeName ? deps.nodeName(*cfg, *net) : std::string();
    ctx.poolNamespace = handle->poolNamespace;
    ctx.deadline = deadline;
    ctx.sleep = deps.sleep;

    core::Owner owner{e.containerId, e.args.podRef(), e.ifName, ctx.node, e.args.podUid, net->name};
    Outcome out;
    switch (e.command) {
        case Command::Add: {
            // Requested addresses: runtimeConfig.ips, else args.cni.ips, else CNI_ARGS IP=
            // (CONVENTIONS.md: the CNI_ARGS key is ignored when the config carries addresses).
            // Whereabouts fails an ADD (not a DEL) on an exclude it cannot read.
            if (cfg->addError) {
                out = failWith(version, *cfg->addError, log);
                break;
            }
            std::vector<core::IpAddress> requested = net->requestedIps;
            if (requested.empty() && !e.args.ipText.empty()) {
                auto ips = parseArgIps(e.args.ipText);
                if (!ips) {
                    out = failWith(version, ips.error(), log);
                    break;
                }
                requested = std::move(*ips);
            }
            auto r = add(ctx, *cfg, *net, owner, requested);
            if (!r) {
                out = failWith(version, r.error(), log);
                break;
            }
            std::string ips;
            for (const auto& ip : r->ips) ips += (ips.empty() ? "" : ",") + ip.ip.str();
            if (log) log->info("ADD allocated " + ips);
            out = Outcome{0, formatResult(*r, version) + "\n"};
            break;
        }
        case Command::Del: {
            auto r = del(ctx, *cfg, owner);
            if (!r) {
                out = failWith(version, r.error(), log);
                break;
            }
            if (log) {
                if (*r) log->error("DEL not finished (" + ctx.journalReason +
                                   "); release journaled for allot-gc to replay");
                else log->info("DEL released");
            }
            out = Outcome{0, ""};
            break;
        }
        case Command::Check: {
            auto r = check(ctx, *cfg, *net, owner);
            if (!r) {
                out = fail(version, r.code() == Errc::NotFound ? kCheckFailed : cniCodeFor(r.code()),
                           r.error().message, log, errorDetails(r.error()));
                break;
            }
            if (deps.checkInterface) {
                auto c = deps.checkInterface(e.netns, e.ifName, *r);
                if (!c) {
                    out = fail(version, kCheckFailed, c.error().message, log);
                    break;
                }
            }
            out = Outcome{0, ""};
            break;
        }
        case Command::Gc: {
            // null (libcni with no attachments left) or no key at all (cnitool gc): nothing on
            // this network is valid, so everything this node holds on it goes.
            auto r = gc(ctx, *cfg, net->name, net->validAttachments);
            if (!r) {
                out = failWith(version, r.error(), log);
                break;
            }
            if (log) log->info("GC released " + std::to_string(*r) + " allocation(s)");
            out = Outcome{0, ""};
            break;
        }
        case Command::Status: {
            auto r = status(ctx, *cfg);
            if (!r) {
                out = fail(version, kPluginNotAvailable, r.error().message, log, errorDetails(r.error()));
                break;
            }
            out = Outcome{0, ""};
            break;
        }
        case Command::Version: break;
    }
    out.conflicts = ctx.conflicts;
    out.served = ctx.served;
    return out;
}

}  // namespace allot::plugin
