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
                {"allot.conf", "nodename", "allot.kubeconfig"}};
    }
};

}  // namespace

TEST_CASE("uninstall removes the plugin and allot's conf files; the journal and locks stay") {
    TempNode n;
    auto r = removeNodeFiles(n.files());

    CHECK(r.failed.empty());
    CHECK(r.removed.size() == 4);  // allot and 3 conf files
    for (auto gone : {"bin/allot", "conf/allot.conf", "conf/nodename", "conf/allot.kubeconfig"})
        CHECK_MESSAGE(!fs::exists(n.root / gone), gone);
    for (auto kept : {"bin/macvlan", "conf/other.conf", "run/locks/a.lock",
                      "journal/ctr-1-net1.json", "journal/notes.txt", "conf"})
        CHECK_MESSAGE(fs::exists(n.root / kept), kept);
}

TEST_CASE("uninstall a second time removes nothing and fails nothing; empty members are skipped") {
    TempNode n;
    removeNodeFiles(n.files());
    auto again = removeNodeFiles(n.files());
    CHECK(again.removed.empty());
    CHECK(again.failed.empty());

    auto none = removeNodeFiles(NodeFiles{});
    CHECK(none.removed.empty());
    CHECK(fs::exists(n.root / "bin/macvlan"));
}
