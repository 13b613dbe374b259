#include "gc-sidecar/daemon/uninstall.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "../../temp_dir.h"

namespace fs = std::filesystem;
using allot::gc::NodeFiles;
using allot::gc::removeNodeFiles;

namespace {

struct TempNode {
    allot::test::TempDir dir;
    fs::path root = dir.path;
    TempNode() {
        for (auto f : {"bin/allot", "bin/macvlan", "conf/allot.conf", "conf/nodename",
                       "conf/allot.kubeconfig", "conf/other.conf", "run/locks/a.lock",
                       "journal/ctr-1-net1.json", "journal/ctr-2-net1.json", "journal/notes.txt"})
            dir.write(f, "x");
    }
    NodeFiles files() const {
        return {(root / "bin/allot").string(),
                (root / "conf").string(),
                {"allot.conf", "nodename", "allot.kubeconfig"},
                (root / "run/locks").string(),
                (root / "journal").string()};
    }
};

}  // namespace

TEST_CASE("uninstall removes the plugin, allot's conf files, the locks and the journal, only") {
    TempNode n;
    auto r = removeNodeFiles(n.files());

    CHECK(r.failed.empty());
    CHECK(r.removed.size() == 7);  // allot, 3 conf files, the locks dir, 2 journal files
    CHECK(r.journalEntries == 2);
    for (auto gone : {"bin/allot", "conf/allot.conf", "conf/nodename", "conf/allot.kubeconfig",
                      "run/locks", "journal/ctr-1-net1.json", "journal/ctr-2-net1.json"})
        CHECK_MESSAGE(!fs::exists(n.root / gone), gone);
    for (auto kept : {"bin/macvlan", "conf/other.conf", "journal/notes.txt", "conf", "run"})
        CHECK_MESSAGE(fs::exists(n.root / kept), kept);
}

TEST_CASE("uninstall a second time removes nothing and fails nothing; empty members are skipped") {
    TempNode n;
    removeNodeFiles(n.files());
    auto again = removeNodeFiles(n.files());
    CHECK(again.removed.empty());
    CHECK(again.failed.empty());
    CHECK(again.journalEntries == 0);

    auto none = removeNodeFiles(NodeFiles{});
    CHECK(none.removed.empty());
    CHECK(fs::exists(n.root / "bin/macvlan"));
}
