#pragma once
// The node layer's tests: the engine's calls (engine_fixture.h) with this node's files (the
// pool lock, the group-commit queue) in a scratch directory, as plugin processes on one
// node share them. Header only.

#include <memory>
#include <string>
#include <vector>

#include "../engine/engine_fixture.h"
#include "../temp_dir.h"
#include "engine/commit_queue.h"
#include "engine/pool_locker.h"
#include "node_state/commit_queue.h"
#include "node_state/file_lock.h"

namespace allot::test {

// One /24 pool, and its key in the lock and queue files ("<namespace>.<pool>").
inline const std::string kBig = R"("range":"10.1.0.0/24")";
inline const std::string kBigPool = "10.1.0.0-24";
inline const std::string kPoolKey = "kube-system.10.1.0.0-24";

// Two configs on that pool: disjoint windows, and an exclude on one of them.
inline const std::string kTeamA =
    R"("range":"10.1.0.0/24","range_start":"10.1.0.10","range_end":"10.1.0.59","exclude":["10.1.0.8/30"])";
inline const std::string kTeamB =
    R"("range":"10.1.0.0/24","range_start":"10.1.0.100","range_end":"10.1.0.149")";

// What another plugin process on node-a queues for the /24: an address for `cid`, with the
// whole range as its window.
inline engine::CommitRequest request(const std::string& cid) {
    engine::CommitRequest r{{cid, "ns/" + cid, "net1", "node-a", "", "net"}, std::nullopt, {}};
    r.window = core::IpRange::fromSpec({"10.1.0.0/24", "", "", {}}, "range").value();
    return r;
}

// One node: the engine fixture's store, and the node's directory of lock and queue files.
struct Node : Engine {
    TempDir dir;
    std::string path() const { return dir.path.string(); }
};

// One plugin process's call on a node: a Context with its own file lock and commit queue over
// the node's directory.
struct Call {
    std::unique_ptr<engine::PoolLocker> locker;
    std::unique_ptr<engine::CommitQueue> queue;
    engine::Context ctx;
    Call(Node& n, const core::ValidatedConfig& cfg)
        : locker(allot::node_state::makeFileLocker(n.path())),
          queue(allot::node_state::makeFileCommitQueue(n.path())),
          ctx(n.context(cfg)) {
        ctx.locker = locker.get();
        ctx.queue = queue.get();
    }
    core::Result<std::vector<engine::IpResult>> add(const core::ValidatedConfig& cfg,
                                                    const core::Owner& o) {
        return engine::add(ctx, cfg, "net", o, {});
    }
    core::Result<bool> del(const core::ValidatedConfig& cfg, const core::Owner& o) {
        return engine::del(ctx, cfg, o);
    }
};

}  // namespace allot::test
