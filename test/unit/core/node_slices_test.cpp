#include "core/node_slices.h"

#include <doctest/doctest.h>

#include <set>

#include "core/config.h"

using namespace allot::core;

namespace {

Cidr cidr(const char* s) {
    return *Cidr::parse(s);
}

std::vector<std::string> strs(const std::vector<Cidr>& v) {
    std::vector<std::string> out;
    for (const auto& c : v) out.push_back(c.str());
    return out;
}

const SliceBusy kNeverBusy = [](const SliceAllocation&) { return false; };

SliceBusy busyIn(std::set<std::string> slices, std::vector<std::string>* asked = nullptr) {
    return [slices, asked](const SliceAllocation& a) {
        if (asked) asked->push_back(a.nodeName + " " + a.sliceRange);
        return slices.count(a.sliceRange) > 0;
    };
}

SlicePlan plan(const char* range, int len, std::vector<SliceAllocation> cur,
               std::vector<std::string> nodes, const SliceBusy& busy = kNeverBusy) {
    auto p = planSlices({cidr(range), len, std::move(cur), std::move(nodes)}, busy);
    REQUIRE(p);
    return *p;
}

}  // namespace

TEST_CASE("an IPv4 range is cut into slices in address order, as Whereabouts cuts it") {
    auto s = carveSlices(cidr("10.0.0.0/22"), 24);
    REQUIRE(s);
    CHECK(strs(*s) ==
          std::vector<std::string>{"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"});
    auto big = carveSlices(cidr("10.0.0.0/16"), 24);
    REQUIRE(big);
    CHECK(big->size() == 256);
    CHECK(big->back().str() == "10.0.255.0/24");
}

TEST_CASE("an IPv6 range is cut into slices, including past 64 bits") {
    auto s = carveSlices(cidr("fd00:1::/64"), 66);
    REQUIRE(s);
    CHECK(strs(*s) == std::vector<std::string>{"fd00:1::/66", "fd00:1:0:0:4000::/66",
                                               "fd00:1:0:0:8000::/66", "fd00:1:0:0:c000::/66"});
    auto fine = carveSlices(cidr("fd00::/112"), 120);
    REQUIRE(fine);
    CHECK(fine->size() == 256);
    CHECK(fine->back().str() == "fd00::ff00/120");
}

TEST_CASE("a slice size that cannot cut the range is refused with the sizes named") {
    auto shorter = carveSlices(cidr("10.0.0.0/24"), 24);
    REQUIRE_FALSE(shorter);
    CHECK(shorter.code() == Errc::InvalidConfig);
    CHECK(shorter.error().message.find("10.0.0.0/24") != std::string::npos);
    CHECK_FALSE(carveSlices(cidr("10.0.0.0/24"), 33));
    auto many = carveSlices(cidr("10.0.0.0/8"), 24);
    REQUIRE_FALSE(many);
    CHECK(many.error().message.find("8192") != std::string::npos);
    CHECK(carveSlices(cidr("10.0.0.0/8"), 21)->size() == kMaxNodeSlices);
    CHECK_FALSE(carveSlices(cidr("fd00::/64"), 80));
}

TEST_CASE("slice sizes read as Whereabouts reads them") {
    CHECK(*parseSliceSize("/28") == 28);
    CHECK(*parseSliceSize("28") == 28);
    CHECK_FALSE(parseSliceSize(""));
    CHECK_FALSE(parseSliceSize("/"));
    CHECK_FALSE(parseSliceSize("/2x"));
    CHECK_FALSE(parseSliceSize("-4"));
    CHECK(parseSliceSize("big").error().message.find("big") != std::string::npos);
}

TEST_CASE("NodeSlicePool names: Whereabouts' for the first range, a range suffix after it") {
    CHECK(nodeSlicePoolName("blue", 0, cidr("10.0.0.0/16")) == "blue");
    CHECK(nodeSlicePoolName("blue", 1, cidr("fd00::/64")) == "blue-fd00---64");
}

TEST_CASE("every range of a dual-stack network is cut into as many slices as the first") {
    CHECK(*sliceLengthFor(cidr("10.0.0.0/16"), 24, cidr("fd00::/64")) == 72);
    CHECK(*sliceLengthFor(cidr("10.0.0.0/16"), 24, cidr("10.1.0.0/20")) == 28);
    CHECK_FALSE(sliceLengthFor(cidr("10.0.0.0/16"), 24, cidr("10.1.0.0/26")));
    IpamConfig c;
    c.type = "allot";
    c.ranges = {{"10.0.0.0/16", "", "", {}}, {"fd00::/64", "", "", {}}};
    c.nodeSliceSize = "/24";
    auto v = validate(c);
    REQUIRE_MESSAGE(v, (v ? "" : v.error().message));
    CHECK(*v->sliceSize == 24);
    c.ranges[1].range = "fd00::/124";
    auto tooSmall = validate(c);
    REQUIRE_FALSE(tooSmall);
    CHECK(tooSmall.error().message.find("fd00::/124") != std::string::npos);
}

TEST_CASE("a new pool gives every node a slice in name order, lowest address first") {
    auto p = plan("10.0.0.0/22", 24, {}, {"node-c", "node-a", "node-b"});
    CHECK(p.allocations == std::vector<SliceAllocation>{{"node-a", "10.0.0.0/24"},
                                                        {"node-b", "10.0.1.0/24"},
                                                        {"node-c", "10.0.2.0/24"},
                                                        {"", "10.0.3.0/24"}});
    CHECK(p.total == 4);
    CHECK(p.free == 1);
    CHECK(p.unassigned.empty());
}

TEST_CASE("planning twice changes nothing, and a new node takes the first free slice") {
    auto p = plan("10.0.0.0/22", 24, {}, {"a", "b"});
    auto again = plan("10.0.0.0/22", 24, p.allocations, {"b", "a"});
    CHECK(again.allocations == p.allocations);
    auto gone = plan("10.0.0.0/22", 24, p.allocations, {"b"});  // a's pool is empty
    CHECK(gone.allocations[0] == SliceAllocation{"", "10.0.0.0/24"});
    auto joined = plan("10.0.0.0/22", 24, gone.allocations, {"b", "z"});
    CHECK(joined.allocations[0] == SliceAllocation{"z", "10.0.0.0/24"});
    CHECK(joined.allocations[1] == SliceAllocation{"b", "10.0.1.0/24"});
}

TEST_CASE("a gone node's slice is freed only once its pool is empty") {
    std::vector<SliceAllocation> cur{
        {"a", "10.0.0.0/24"}, {"b", "10.0.1.0/24"}, {"", "10.0.2.0/24"}, {"", "10.0.3.0/24"}};
    std::vector<std::string> asked;
    auto held = plan("10.0.0.0/22", 24, cur, {"b", "c"}, busyIn({"10.0.0.0/24"}, &asked));
    CHECK(asked == std::vector<std::string>{"a 10.0.0.0/24"});  // live nodes cost no read
    CHECK(held.allocations[0] == SliceAllocation{"a", "10.0.0.0/24"});
    CHECK(held.allocations[2] == SliceAllocation{"c", "10.0.2.0/24"});
    auto freed = plan("10.0.0.0/22", 24, held.allocations, {"b", "c"});
    CHECK(freed.allocations[0] == SliceAllocation{"", "10.0.0.0/24"});
    CHECK(freed.free == 2);
}

TEST_CASE("more nodes than slices: the nodes left over are named, and nothing is given twice") {
    auto p = plan("10.0.0.0/23", 24, {}, {"n1", "n2", "n3", "n4"});
    CHECK(p.allocations ==
          std::vector<SliceAllocation>{{"n1", "10.0.0.0/24"}, {"n2", "10.0.1.0/24"}});
    CHECK(p.unassigned == std::vector<std::string>{"n3", "n4"});
    CHECK(p.free == 0);
    CHECK(p.total == 2);
}

TEST_CASE("a smaller slice size keeps busy old slices and gives new nodes the new size") {
    std::vector<SliceAllocation> cur{
        {"a", "10.0.0.0/24"}, {"b", "10.0.1.0/24"}, {"", "10.0.2.0/24"}, {"", "10.0.3.0/24"}};
    // a's pool holds pods: it keeps its /24; b's is empty: b moves to a /25.
    auto p = plan("10.0.0.0/22", 25, cur, {"a", "b", "c"}, busyIn({"10.0.0.0/24"}));
    CHECK(p.allocations == std::vector<SliceAllocation>{{"a", "10.0.0.0/24"},
                                                        {"b", "10.0.1.0/25"},
                                                        {"c", "10.0.1.128/25"},
                                                        {"", "10.0.2.0/25"},
                                                        {"", "10.0.2.128/25"},
                                                        {"", "10.0.3.0/25"},
                                                        {"", "10.0.3.128/25"}});
    // Once a's pool is empty it moves to the new size too.
    auto later = plan("10.0.0.0/22", 25, p.allocations, {"a", "b", "c"});
    CHECK(later.allocations[0] == SliceAllocation{"a", "10.0.0.0/25"});
    CHECK(later.allocations[2] == SliceAllocation{"b", "10.0.1.0/25"});
    CHECK(later.total == 8);
}

TEST_CASE("a larger slice size never hands out a slice over a busy old one") {
    std::vector<SliceAllocation> cur{
        {"a", "10.0.0.0/25"}, {"b", "10.0.0.128/25"}, {"", "10.0.1.0/25"}, {"", "10.0.1.128/25"}};
    auto p =
        plan("10.0.0.0/23", 24, cur, {"a", "b", "c"}, busyIn({"10.0.0.0/25", "10.0.0.128/25"}));
    CHECK(p.allocations == std::vector<SliceAllocation>{
                               {"a", "10.0.0.0/25"}, {"b", "10.0.0.128/25"}, {"c", "10.0.1.0/24"}});
    CHECK(p.unassigned.empty());
}

TEST_CASE("a slice outside a changed range stays listed, after the others, while it is busy") {
    std::vector<SliceAllocation> cur{{"a", "10.0.0.0/24"}, {"b", "10.0.1.0/24"}};
    auto p = plan("10.9.0.0/23", 24, cur, {"a", "b"}, busyIn({"10.0.0.0/24"}));
    CHECK(p.allocations == std::vector<SliceAllocation>{
                               {"a", "10.9.0.0/24"}, {"b", "10.9.1.0/24"}, {"a", "10.0.0.0/24"}});
    CHECK(p.total == 2);
    auto later = plan("10.9.0.0/23", 24, p.allocations, {"a", "b"});
    CHECK(later.allocations.size() == 2);
}

TEST_CASE("IPv6 slices are planned like IPv4 ones") {
    auto p = plan("fd00::/64", 66, {}, {"a", "b"});
    CHECK(p.allocations == std::vector<SliceAllocation>{{"a", "fd00::/66"},
                                                        {"b", "fd00::4000:0:0:0/66"},
                                                        {"", "fd00::8000:0:0:0/66"},
                                                        {"", "fd00::c000:0:0:0/66"}});
}

TEST_CASE("entries that are no slice, or a node's second slice, are not kept") {
    std::vector<SliceAllocation> cur{{"a", "garbage"}, {"a", "10.0.1.0/24"}, {"a", "10.0.0.0/24"}};
    auto p = plan("10.0.0.0/23", 24, cur, {"a", "b"});
    CHECK(p.allocations ==
          std::vector<SliceAllocation>{{"b", "10.0.0.0/24"}, {"a", "10.0.1.0/24"}});
}

TEST_CASE("a /16 of /24 slices for 300 nodes: 256 assigned, each once, 44 named as left over") {
    std::vector<std::string> nodes;
    for (int i = 0; i < 300; ++i) nodes.push_back("node-" + std::to_string(1000 + i));
    auto p = plan("10.20.0.0/16", 24, {}, nodes);
    std::set<std::string> holders, slices;
    for (const auto& a : p.allocations) {
        CHECK(holders.insert(a.nodeName).second);
        CHECK(slices.insert(a.sliceRange).second);
    }
    CHECK(p.allocations.size() == 256);
    CHECK(p.unassigned.size() == 44);
    CHECK(p.unassigned.front() == "node-1256");
}

TEST_CASE("a node's slice pool is told by its name and range, with or without network_name") {
    const std::vector<NodeSliceView> nsps{
        {"net", "10.0.0.0/16", {{"node-a", "10.0.1.0/24"}, {"node-b", "10.0.2.0/24"}}},
        {"net-fd00---48", "fd00::/48", {{"node-a", "fd00:0:0:1::/64"}}}};
    auto known = [](const std::string& n) { return n == "node-a" || n == "node-b"; };
    auto a = slicePoolOf(nsps, "net-node-a-10.0.1.0-24", *Cidr::parse("10.0.1.0/24"), known);
    REQUIRE(a);
    CHECK(a->node == "node-a");
    CHECK(a->nodeSlicePool == "net");
    CHECK(a->nodeSlices == std::vector{*Cidr::parse("10.0.1.0/24")});
    CHECK(a->rangeHolder == "node-a");
    // A gone node's pool, its slice given to another: told by the network prefix.
    auto gone = slicePoolOf(nsps, "net-node-x-10.0.2.0-24", *Cidr::parse("10.0.2.0/24"), known);
    REQUIRE(gone);
    CHECK(gone->node == "node-x");
    CHECK(gone->nodeSlices.empty());
    CHECK(gone->rangeHolder == "node-b");
    // No network_name: the name is node-range, and must name a known node.
    auto bare = slicePoolOf(nsps, "node-b-10.0.2.0-24", *Cidr::parse("10.0.2.0/24"), known);
    REQUIRE(bare);
    CHECK(bare->node == "node-b");
    CHECK_FALSE(slicePoolOf(nsps, "other-10.0.2.0-24", *Cidr::parse("10.0.2.0/24"), known));
    // Dual-stack: the second range's NodeSlicePool carries a range suffix.
    auto v6 =
        slicePoolOf(nsps, "net-node-a-fd00-0-0-1---64", *Cidr::parse("fd00:0:0:1::/64"), known);
    REQUIRE(v6);
    CHECK(v6->nodeSlicePool == "net-fd00---48");
    CHECK(v6->node == "node-a");
    // The whole range is no slice.
    CHECK_FALSE(slicePoolOf(nsps, "net-node-a-10.0.0.0-16", *Cidr::parse("10.0.0.0/16"), known));
}

TEST_CASE("a slice's part k is that node's slice pool as much as part 0") {
    const std::vector<NodeSliceView> nsps{
        {"net", "10.0.0.0/16", {{"node-a", "10.0.1.0/24"}, {"node-b", "10.0.2.0/24"}}}};
    auto known = [](const std::string& n) { return n == "node-a" || n == "node-b"; };
    auto p = slicePoolOf(nsps, "net-node-a-10.0.1.0-24-part-3", *Cidr::parse("10.0.1.0/24"), known);
    REQUIRE(p);
    CHECK(p->node == "node-a");
    CHECK(p->nodeSlicePool == "net");
    CHECK(p->rangeHolder == "node-a");
    auto bare = slicePoolOf(nsps, "node-b-10.0.2.0-24-part-1", *Cidr::parse("10.0.2.0/24"), known);
    REQUIRE(bare);
    CHECK(bare->node == "node-b");
    CHECK_FALSE(slicePoolOf(nsps, "other-10.0.2.0-24-part-1", *Cidr::parse("10.0.2.0/24"), known));
}

TEST_CASE(
    "node_slice_parts is refused on a network unless every NAD asks the same, reservations on") {
    const SlicePartsAsk a4{"ns/a", "allot", 4, true}, b4{"ns/b", "allot", 4, true};
    CHECK_FALSE(refuseSliceParts({}));
    CHECK_FALSE(refuseSliceParts({a4, b4}));
    // No parts anywhere: Whereabouts' rules, reservations or not.
    CHECK_FALSE(refuseSliceParts({{"ns/w", "whereabouts", 1, false}, {"ns/x", "allot", 1, true}}));
    // A Whereabouts NAD reads only part 0.
    auto wa = refuseSliceParts({a4, {"ns/w", "whereabouts", 1, true}});
    REQUIRE(wa);
    CHECK(wa->offenders == std::vector<size_t>{1});
    CHECK(wa->message ==
          "every NAD of the network must ask for node_slice_parts 4 and keep "
          "enable_overlapping_ranges: NetworkAttachmentDefinition ns/w (whereabouts) asks for "
          "node_slice_parts 1 (Whereabouts reads only part 0)");
    // Fewer parts, and the reservations off (even with the same count).
    auto mixed = refuseSliceParts({{"ns/c", "allot", 2, true}, a4, {"ns/d", "allot", 4, false}});
    REQUIRE(mixed);
    CHECK(mixed->offenders == std::vector<size_t>{0, 2});
    CHECK(mixed->message.find("ns/c (allot) asks for node_slice_parts 2; "
                              "NetworkAttachmentDefinition ns/d (allot) sets "
                              "enable_overlapping_ranges false") != std::string::npos);
    // A user-made list is named only so far.
    std::vector<SlicePartsAsk> many{a4};
    for (int i = 0; i < 20; ++i)
        many.push_back({"ns/w" + std::to_string(i), "whereabouts", 1, true});
    auto lots = refuseSliceParts(many);
    REQUIRE(lots);
    CHECK(lots->offenders.size() == 20);
    CHECK(lots->message.find("ns/w7 ") != std::string::npos);
    CHECK(lots->message.find("ns/w8 ") == std::string::npos);
    CHECK(lots->message.find("; and 12 more") != std::string::npos);
}
