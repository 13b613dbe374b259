#include "store/node_slice_codec.h"

#include <doctest/doctest.h>

using namespace allot;

namespace {

json::Value parse(const char* text) {
    auto v = json::parse(text);
    REQUIRE(v.ok());
    return std::move(*v);
}

const char* kWhereabouts = R"({
  "apiVersion": "whereabouts.cni.cncf.io/v1alpha1", "kind": "NodeSlicePool",
  "metadata": {"name": "blue", "namespace": "kube-system", "resourceVersion": "42",
               "labels": {"team": "net"},
               "ownerReferences": [{"apiVersion": "k8s.cni.cncf.io/v1",
                                    "kind": "NetworkAttachmentDefinition", "name": "blue",
                                    "uid": "u1", "controller": true}]},
  "spec": {"range": "10.0.0.0/16", "sliceSize": "/24", "future": 1},
  "status": {"allocations": [{"nodeName": "w1", "sliceRange": "10.0.0.0/24"},
                             {"nodeName": "", "sliceRange": "10.0.1.0/24"}]}})";

}  // namespace

TEST_CASE(
    "a NodeSlicePool written by Whereabouts decodes, and is written back with its own fields") {
    auto p = store::decodeNodeSlicePool(parse(kWhereabouts));
    CHECK(p.ns == "kube-system");
    CHECK(p.name == "blue");
    CHECK(p.resourceVersion == "42");
    CHECK(p.range == "10.0.0.0/16");
    CHECK(p.sliceSize == "/24");
    CHECK_FALSE(p.managed);
    CHECK(p.partsRefused.empty());
    REQUIRE(p.owners.size() == 1);
    CHECK(p.owners[0].controller);
    CHECK_FALSE(p.owners[0].blockOwnerDeletion);
    REQUIRE(p.allocations.size() == 2);
    CHECK(store::nodeSliceOf(p, "w1") == std::optional<std::string>("10.0.0.0/24"));
    CHECK_FALSE(store::nodeSliceOf(p, "w2"));

    p.managed = true;
    p.allocations[1].nodeName = "w2";
    auto out = store::encodeNodeSlicePool(p);
    auto back = store::decodeNodeSlicePool(out);
    CHECK(back.managed);
    CHECK(store::nodeSliceOf(back, "w2") == std::optional<std::string>("10.0.1.0/24"));
    // Fields allot does not know stay as they were.
    CHECK(out.find("spec")->find("future")->asInt() == 1);
    CHECK(out.find("metadata")->find("labels")->find("team")->asString() == "net");
}

TEST_CASE("a node_slice_parts refusal reads back, and one that is not a string still refuses") {
    auto p = store::decodeNodeSlicePool(parse(kWhereabouts));
    p.partsRefused = "NADs blue and red disagree";
    auto out = store::encodeNodeSlicePool(p);
    CHECK(store::decodeNodeSlicePool(out).partsRefused == "NADs blue and red disagree");
    out.find("metadata")
        ->find("annotations")
        ->set(store::kPartsRefusedAnnotation, json::Value::boolean(true));
    CHECK(store::decodeNodeSlicePool(out).partsRefused == "refused");
    p.partsRefused.clear();
    auto cleared = store::encodeNodeSlicePool(p);
    CHECK(store::decodeNodeSlicePool(cleared).partsRefused.empty());
}

TEST_CASE("a NodeSlicePool of the wrong shape decodes as empty fields, never a crash") {
    for (const char* text : {"{}", "[]", R"({"metadata": 3, "spec": [], "status": "x"})",
                             R"({"status": {"allocations": [1, {"nodeName": 2}]}})"}) {
        CAPTURE(text);
        auto p = store::decodeNodeSlicePool(parse(text));
        CHECK(p.name.empty());
        CHECK(p.range.empty());
        CHECK_FALSE(store::nodeSliceOf(p, ""));
    }
}
