#pragma once
// The plugin's tests: run() as the runtime calls it (environment and stdin in, stdout and exit
// code out) over an in-memory store, journal and interface check. Header only.

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "../store/store_ref.h"
#include "node_state/commit_queue.h"
#include "node_state/file_lock.h"
#include "plugin/plugin.h"
#include "store/memory_store.h"

namespace allot::test {

struct MemJournal : engine::ReleaseJournal {
    std::vector<engine::JournalEntry>* out;
    explicit MemJournal(std::vector<engine::JournalEntry>* o) : out(o) {}
    core::Result<void> record(const engine::JournalEntry& e) override {
        out->push_back(e);
        return {};
    }
};

struct Harness {
    std::shared_ptr<store::MemoryStore> mem = std::make_shared<store::MemoryStore>();
    std::vector<engine::JournalEntry> journal;
    std::string node = "node-a";
    std::vector<std::string> checkedNetns;
    bool ifaceOk = true;
    plugin::Deps deps;

    Harness() {
        deps.flatFiles = {};
        deps.makeStore = [this](const core::ValidatedConfig&,
                                engine::Clock::time_point) -> core::Result<plugin::StoreHandle> {
            return plugin::StoreHandle{std::make_unique<StoreRef<store::MemoryStore>>(mem),
                                       "kube-system"};
        };
        deps.makeJournal = [this](const core::ValidatedConfig&) {
            return std::make_unique<MemJournal>(&journal);
        };
        deps.nodeName = [this](const core::ValidatedConfig&, const cni::NetConf&) { return node; };
        deps.sleep = [](std::chrono::milliseconds) {};
        deps.checkInterface = [this](
                                  const std::string& netns, const std::string&,
                                  const std::vector<engine::IpResult>& ips) -> core::Result<void> {
            checkedNetns.push_back(netns);
            if (!ifaceOk)
                return core::makeError(core::Errc::NotFound,
                                       "address " + ips[0].ip.str() + " missing");
            return {};
        };
    }

    // This node's lock and commit queue, in `dir`.
    void useNodeFiles(const std::string& dir) {
        deps.makeLocker = [dir](const core::ValidatedConfig&) {
            return allot::node_state::makeFileLocker(dir);
        };
        deps.makeQueue = [dir](const core::ValidatedConfig&) {
            return allot::node_state::makeFileCommitQueue(dir);
        };
    }

    plugin::Outcome call(const std::string& cmd, const std::string& conf,
                         const std::string& cid = "ctr1", const std::string& ifname = "net1",
                         const std::string& args = "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod1") {
        plugin::EnvMap env{
            {"CNI_COMMAND", cmd},   {"CNI_CONTAINERID", cid},     {"CNI_NETNS", "/var/run/netns/t"},
            {"CNI_IFNAME", ifname}, {"CNI_PATH", "/opt/cni/bin"}, {"CNI_ARGS", args}};
        return plugin::run(env, conf, deps);
    }
};

// A network config named "net" of `version`, with `extra` top-level keys (each followed by a
// comma) and `ipam`'s keys in its ipam object.
inline std::string conf(const std::string& ipam, const std::string& version = "1.1.0",
                        const std::string& extra = "") {
    return R"({"cniVersion":")" + version + R"(","name":"net","type":"macvlan",)" + extra +
           R"("ipam":{"type":"allot",)" + ipam + "}}";
}

inline const std::string kV4 = R"("range":"10.0.0.0/29","gateway":"10.0.0.1")";

// CNI_ARGS of pod ns/`pod`.
inline std::string podArgs(const std::string& pod) {
    return "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=" + pod;
}

inline json::Value parsed(const plugin::Outcome& o) {
    auto v = json::parse(o.stdoutText);
    REQUIRE_MESSAGE(v.ok(), o.stdoutText);
    return *v;
}

inline int errorCode(const plugin::Outcome& o) {
    auto v = parsed(o);
    const json::Value* code = v.find("code");
    REQUIRE_MESSAGE(code != nullptr, o.stdoutText);
    return static_cast<int>(*code->asInt());
}

inline std::string errorMsg(const plugin::Outcome& o) {
    return parsed(o).find("msg")->asString();
}

inline std::string firstAddress(const plugin::Outcome& o) {
    auto v = parsed(o);
    const json::Value* ips = v.find("ips");
    REQUIRE_MESSAGE(ips != nullptr, o.stdoutText);
    return ips->items()[0].find("address")->asString();
}

}  // namespace allot::test
