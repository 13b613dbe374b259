#include "gc-sidecar/node/journal_replay.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../../cluster/fake_cluster.h"
#include "../event_log.h"

using namespace allot;

namespace {

constexpr const char* kNs = "pools";
constexpr const char* kPool = "10.1.0.0-24";

struct Replay {
    test::FakeCluster fake;
    test::EventLog events;
    gc::Metrics metrics;
    gc::StopSignal stop;
    std::string dir;
    gc::JournalReplayer replayer;

    Replay() : dir(tempDir()), replayer(dir, kNs, fake, events, metrics, stop) {
        fake.putPool(kNs, {kPool, "10.1.0.0/24", {}, {}, {}});
    }
    ~Replay() { std::filesystem::remove_all(dir); }

    static std::string tempDir() {
        char tmpl[] = "/tmp/allot-journal-replay-XXXXXX";
        REQUIRE(::mkdtemp(tmpl));
        return tmpl;
    }
    void hold(core::u128 off, const std::string& ctr, const std::string& ref) {
        auto p = *fake.pool(kNs, kPool);
        p.allocations[off] = core::Owner{ctr, ref, "net1", "n1", "", "macnet"};
        fake.putPool(kNs, p);
    }
    bool held(core::u128 off) { return fake.pool(kNs, kPool)->allocations.count(off) > 0; }
    std::string backlog() {
        const std::string text = metrics.render();
        auto at = text.find("\nallot_journal_backlog ");
        return at == std::string::npos ? ""
                                       : text.substr(at + 23, text.find('\n', at + 1) - at - 23);
    }
};

}  // namespace

TEST_CASE("a journaled release frees only its container's entry, and its file goes once it did") {
    Replay r;
    r.hold(5, "c1", "app/web");
    r.hold(6, "c2", "app/web");  // a newer sandbox of the same pod: not the journal's to free
    node_state::Journal j(r.dir);
    REQUIRE(j.append({kNs, {kPool}, "macnet", "c1", "net1", "app/web", "n1", {}}).ok());
    r.replayer.replayOnce();
    CHECK_FALSE(r.held(5));
    CHECK(r.held(6));
    CHECK(j.entries()->empty());
    CHECK(r.backlog() == "0");
    CHECK(r.events.count("AddressReleased") == 1);
}

TEST_CASE("an entry whose release fails stays for the next replay, and an unreadable one is left") {
    Replay r;
    r.hold(7, "c7", "app/db");
    node_state::Journal j(r.dir);
    REQUIRE(j.append({"", {}, "", "c7", "net1", "app/db", "n1", {}}).ok());  // names no pool
    std::ofstream(r.dir + "/garbage.json") << "{not json";
    r.fake.failNext("updatePool", 1, core::Errc::Transient);
    r.replayer.replayOnce();
    CHECK(r.held(7));
    CHECK(r.backlog() == "2");
    r.replayer.replayOnce();
    CHECK_FALSE(r.held(7));
    CHECK(j.entries()->empty());
    CHECK(std::filesystem::exists(r.dir + "/garbage.json"));
    CHECK(r.backlog() == "1");
}
