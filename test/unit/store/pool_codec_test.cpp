#include "store/pool_codec.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "core/allocator.h"

using namespace allot;

TEST_CASE("a pool written by Whereabouts decodes, without allot's optional fields") {
    auto v = json::parse(R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
      "metadata":{"name":"10.0.0.0-24","namespace":"kube-system","resourceVersion":"42"},
      "spec":{"range":"10.0.0.0/24","allocations":{"5":{"id":"abc","podref":"ns/p","ifname":"net1"},
      "7":{"id":"def","podref":"ns/q"}}}})");
    REQUIRE(v.ok());
    auto p = store::decodePool(*v);
    REQUIRE(p.ok());
    CHECK(p->name == "10.0.0.0-24");
    CHECK(p->resourceVersion == "42");
    CHECK(p->allocations.size() == 2);
    CHECK(p->allocations.at(5).ifName == "net1");
    CHECK(p->allocations.at(7).ifName.empty());
    CHECK(p->allocations.at(7).node.empty());
}

TEST_CASE("a pool decoded and re-encoded is stable") {
    store::Pool p{"n", "fd00::/64", {}, "9"};
    p.allocations[(core::u128(1) << 70)] = core::Owner{"c", "ns/p", "eth0", "node", "uid", "net"};
    p.allocations[3] = core::Owner{"d", "ns/q", "", "", "", ""};
    auto text = store::encodePool(p, "kube-system").dump();
    auto back = store::decodePool(*json::parse(text));
    REQUIRE(back.ok());
    CHECK(back->allocations == p.allocations);
    CHECK(store::encodePool(*back, "kube-system").dump() == text);
}

TEST_CASE("bad pool objects are Invalid and name the field") {
    auto bad = [](const char* text) {
        auto p = store::decodePool(*json::parse(text));
        REQUIRE(!p.ok());
        CHECK(p.code() == core::Errc::Invalid);
        return p.error().message;
    };
    CHECK(bad(R"({"spec":{"range":"10.0.0.0/24","allocations":[]}})").find("allocations") !=
          std::string::npos);
    CHECK(bad(R"({"spec":{}})").find("range") != std::string::npos);
    CHECK(bad(R"({"spec":{"range":7}})").find("range") != std::string::npos);
    CHECK(bad(R"([])").find("array") != std::string::npos);
}

TEST_CASE(
    "entries allot cannot decode are kept verbatim with a reason, and their offsets are taken") {
    const char* text = R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
      "metadata":{"name":"10.0.0.0-24","namespace":"kube-system","resourceVersion":"42"},
      "spec":{"range":"10.0.0.0/24","allocations":{
        "1":{"id":"ok","podref":"ns/ok","ifname":"net1"},
        "2":{"podref":"a/b"},
        "3":{"id":5,"podref":"a/c"},
        "4":{"id":"x","podref":["a","d"]},
        "5":"just a string",
        "6":{"id":"","podref":"a/e"},
        "007":{"id":"z","podref":"a/f"},
        "x1":{"id":"y","podref":"a/g"},
        "-1":{"id":"w","podref":"a/h"},
        "999999999999999999999999999999999999999999":{"id":"a"}}}})";
    auto v = json::parse(text);
    REQUIRE(v.ok());
    auto p = store::decodePool(*v);
    REQUIRE(p.ok());
    REQUIRE(p->undecoded.size() == 9);
    CHECK(p->undecoded.at("2").reason.find("no id") != std::string::npos);
    CHECK(p->undecoded.at("3").reason.find("id is a JSON number") != std::string::npos);
    CHECK(p->undecoded.at("4").reason.find("podref") != std::string::npos);
    CHECK(p->undecoded.at("5").reason.find("not an object") != std::string::npos);
    CHECK(p->undecoded.at("6").reason.find("empty") != std::string::npos);
    CHECK(p->undecoded.at("007").reason.find("key") != std::string::npos);
    CHECK(p->undecoded.at("x1").reason.find("key") != std::string::npos);
    // Decodable offsets (2..7) are taken by placeholders; 1 is a real owner.
    CHECK(p->allocations.size() == 7);
    for (core::u128 off : {2, 3, 4, 5, 6, 7}) CHECK(store::isPlaceholder(p->allocations.at(off)));
    CHECK(p->allocations.at(1).containerId == "ok");

    // Never handed out: the allocator skips every taken offset.
    auto range = core::IpRange::fromSpec({"10.0.0.0/24", "", "", {}}, "range");
    REQUIRE(range.ok());
    auto pick = core::pick(*range, p->allocations,
                           {core::Owner{"new", "ns/new", "eth0", "", "", ""}, {}, {}, nullptr});
    REQUIRE(pick.ok());
    CHECK(pick->offset == 8);
    // A release of the one real owner leaves the placeholders (a CNI call always names a
    // container, and no decoded entry has an empty id).
    store::Pool after = *p;
    CHECK(core::release(after.allocations, "ok", "net1") == 1);
    CHECK(after.allocations.size() == 7);  // six placeholders and the new entry

    // Written back exactly as read, next to the new entry.
    auto out = store::encodePool(*p, "kube-system");
    const json::Value& allocs = *out.find("spec")->find("allocations");
    const json::Value& in = *v->find("spec")->find("allocations");
    for (const auto& [k, e] : in.members()) {
        REQUIRE(allocs.find(k) != nullptr);
        CHECK(allocs.find(k)->dump() == e.dump());
    }
    CHECK(allocs.find("8")->find("id")->asString() == "new");
    CHECK(allocs.members().size() == in.members().size() + 1);
}

TEST_CASE(
    "a placeholder overwritten by a caller is refused, not written over the undecoded entry") {
    auto p = store::decodePool(
        *json::parse(R"({"spec":{"range":"10.0.0.0/24","allocations":{"2":{"podref":"a/b"}}}})"));
    REQUIRE(p.ok());
    p->allocations[2] = core::Owner{"ctr", "ns/p", "eth0", "", "", ""};
    auto f = store::fitPool(*p, "ns");
    REQUIRE(!f.ok());
    CHECK(f.code() == core::Errc::Internal);
}

TEST_CASE("unknown fields survive a round trip and leave with their owner") {
    auto p = store::decodePool(
        *json::parse(R"({"metadata":{"name":"n","labels":{"a":"b"}},"status":{"s":1},
      "spec":{"range":"10.0.0.0/24","future":[1],"allocations":{
        "1":{"id":"c1","podref":"ns/p1","ifname":"net1","ipamclaimref":"ns/claim","zz":{"k":true}},
        "2":{"id":"c2","podref":"ns/p2","ifname":"net1","ipamclaimref":"ns/claim2"}}}})"));
    REQUIRE(p.ok());
    REQUIRE(p->unknownFields.size() == 2);
    p->allocations.erase(2);
    p->allocations[2] = core::Owner{"c3", "ns/p3", "net1", "", "", ""};  // another owner
    auto out = store::encodePool(*p, "ns");
    const json::Value& allocs = *out.find("spec")->find("allocations");
    CHECK(
        allocs.find("1")->dump() ==
        R"({"id":"c1","podref":"ns/p1","ifname":"net1","ipamclaimref":"ns/claim","zz":{"k":true}})");
    CHECK(allocs.find("2")->find("ipamclaimref") == nullptr);
    CHECK(out.find("status")->dump() == R"({"s":1})");
    CHECK(out.find("spec")->find("future")->dump() == "[1]");
    CHECK(out.find("metadata")->find("labels")->dump() == R"({"a":"b"})");
}

// Every field Whereabouts v0.9.4 writes: IPPool (TypeMeta, ObjectMeta as the API server fills
// it, spec.range, spec.allocations{id, podref, ifname}), from its
// pkg/api/whereabouts.cni.cncf.io/v1alpha1/ippool_types.go and pkg/storage/kubernetes/ipam.go
// (a JSON patch of the typed pool), plus a field of a later release.
TEST_CASE("a Whereabouts 0.9.4 pool round-trips with every field it writes") {
    const char* text = R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
      "metadata":{"creationTimestamp":"2026-11-20T10:00:00Z","generation":3,"name":"blue-10.0.0.0-24",
        "namespace":"kube-system","resourceVersion":"1234","uid":"6d1f2a44-0c8e-4b8e-9a57-3a1f0e2b9c11",
        "managedFields":[{"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","fieldsType":"FieldsV1",
          "fieldsV1":{"f:spec":{".":{},"f:allocations":{".":{},"f:1":{".":{},"f:id":{},"f:ifname":{},"f:podref":{}}},
          "f:range":{}}},"manager":"whereabouts","operation":"Update","time":"2026-11-20T10:00:00Z"}]},
      "spec":{"allocations":{
        "1":{"id":"4b1f0c9e2d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c","ifname":"net1","podref":"default/web-0"},
        "2":{"id":"9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c4b1f0c9e2d7a6b5c4d3e2f1a0b","podref":"default/web-1"},
        "3":{"id":"0f9a8b7c6d5e4f3a2b1c4b1f0c9e2d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e","ifname":"net2","podref":"default/vm-a","ipamclaimref":"default/vm-a.net2"}},
        "range":"10.0.0.0/24"}})";
    auto v = json::parse(text);
    REQUIRE(v.ok());
    auto p = store::decodePool(*v);
    REQUIRE(p.ok());
    CHECK(p->undecoded.empty());
    CHECK(p->allocations.size() == 3);
    CHECK(p->allocations.at(2).ifName.empty());
    CHECK(p->stored.overhead > 100);  // managedFields are counted in the stored size
    auto out = store::encodePool(*p, "kube-system");
    // managedFields are the server's to keep: omitted from a write, they are left as they are.
    json::Value expected = *v;
    expected.find("metadata")->erase("managedFields");
    auto canon = [](const json::Value& x) {
        // Member order is not part of the format: compare as the API server stores (sorted).
        std::function<json::Value(const json::Value&)> sort = [&](const json::Value& y) {
            if (!y.isObject()) return y;
            std::vector<std::pair<std::string, json::Value>> m(y.members().begin(),
                                                               y.members().end());
            std::sort(m.begin(), m.end(),
                      [](const auto& a, const auto& b) { return a.first < b.first; });
            json::Value o = json::Value::object();
            for (auto& [k, val] : m) o.members().emplace_back(k, sort(val));
            return o;
        };
        return sort(x).dump();
    };
    CHECK(canon(out) == canon(expected));
    auto again = store::decodePool(out);
    REQUIRE(again.ok());
    CHECK(canon(store::encodePool(*again, "kube-system")) == canon(expected));
}

TEST_CASE("poolSize is the encoded size, without allot's fields for the Whereabouts form") {
    store::Pool p{"n", "10.0.0.0/16", {}, "9"};
    p.meta = *json::parse(R"({"labels":{"q":"\"x\"\n"}})");
    p.allocations[1] = core::Owner{"c\"1", "ns/p\\1", "eth0", "node\t1", "uid\x01", "net"};
    p.allocations[300] = core::Owner{"c2", "ns/p2", "", "", "", ""};
    p.unknownFields[300] = store::UnknownFields{"c2", "", *json::parse(R"({"u":[1,{"v":"w"}]})")};
    p.undecoded["5"] = store::UndecodedEntry{*json::parse(R"({"podref":"é"})"), "no id"};
    p.allocations[5] = core::Owner{};
    auto size = store::poolSize(p, "kube-system");
    CHECK(size.bytes == store::encodePool(p, "kube-system").dump().size());
    CHECK(size.entries == 3);
    store::Pool wb = p;
    for (auto& [off, o] : wb.allocations) o.node = o.podUid = o.network = "";
    CHECK(size.whereaboutsBytes == store::encodePool(wb, "kube-system").dump().size());
    store::Pool empty{"n", "10.0.0.0/16", {}, ""};
    CHECK(store::poolSize(empty, "").bytes == store::encodePool(empty, "").dump().size());
}

namespace {

// A /19 as the bench fills it: containerd sandbox IDs, Deployment-style pod names.
store::Pool slash19(size_t n, bool extras) {
    store::Pool p{"10.20.0.0-19", "10.20.0.0/19", {}, "1"};
    for (size_t i = 1; i <= n; ++i) {
        char id[65];
        std::snprintf(id, sizeof id, "%064zx", i * 2654435761u);
        const std::string s = std::to_string(i);
        core::Owner o{id, "default/web-5f7d8c9b6d-" + s, "net1", "", "", ""};
        if (extras) {
            o.node = "worker-" + std::to_string(i % 50);
            o.podUid = "0b5d3c1e-7f6a-4b2c-9d8e-" + std::string(12 - s.size(), '0') + s;
            o.network = "macvlan-conf";
        }
        p.allocations[i] = o;
    }
    return p;
}

}  // namespace

TEST_CASE("a full /19 fits and costs at most 1.1x Whereabouts' bytes per entry") {
    const size_t n = 8190;
    store::Pool wb = slash19(n, false);
    const size_t wbBytes = store::poolSize(wb, "kube-system").bytes;
    // Filled one ADD at a time, as the plugin does: each write goes through the policy.
    store::Pool p = slash19(0, false);
    store::Pool full = slash19(n, true);
    for (size_t i = 1; i <= n; ++i) {
        p.allocations[i] = full.allocations.at(i);
        auto f = store::fitPool(p, "kube-system");
        REQUIRE(f.ok());
        if (i % 512 == 0 || i == n)
            p.stored = store::StoredSize{f->estimatedStored, 0, f->size.entries};
    }
    const size_t allotBytes = store::poolSize(p, "kube-system").bytes;
    MESSAGE("bytes per entry at 8190: allot " << allotBytes / double(n) << ", Whereabouts "
                                              << wbBytes / double(n) << " (x"
                                              << double(allotBytes) / double(wbBytes) << ")");
    CHECK(allotBytes * 10 <= wbBytes * 11);
    CHECK(allotBytes <= store::SizePolicy{}.maxBytes);
    size_t kept = 0;
    for (const auto& [off, o] : p.allocations) kept += !o.node.empty();
    MESSAGE("entries keeping node/poduid/network: " << kept);
    CHECK(kept > 1000);
    CHECK(!p.allocations.at(1).podUid.empty());
    // A pool of Whereabouts' 12,000-entry size still takes a write that does not grow it.
    store::Pool big = slash19(12000, false);
    big.range = "10.20.0.0/18";
    auto f = store::fitPool(big, "kube-system");
    REQUIRE(!f.ok());
    CHECK(f.code() == core::Errc::TooLarge);
    big.stored = store::StoredSize{store::poolSize(big, "kube-system").bytes, 0, 12000};
    big.allocations.erase(5);
    CHECK(store::fitPool(big, "kube-system").ok());
}

TEST_CASE("cannotGrow says why only when one more entry in Whereabouts' form would not fit") {
    store::Pool p = slash19(8190, true);
    CHECK(!store::cannotGrow(p, "kube-system"));  // a full /19 has room in the object
    const size_t wb = store::poolSize(p, "kube-system").whereaboutsBytes;
    store::SizePolicy tight;
    tight.maxBytes = wb + 60;  // less than one entry's room
    auto why = store::cannotGrow(p, "kube-system", tight);
    REQUIRE(why);
    CHECK(why->find("IPPool kube-system/" + p.name + " cannot take another entry") == 0);
    CHECK(why->find("8190 entries") != std::string::npos);
    CHECK(why->find("code 11") != std::string::npos);
    // The same limit refuses that next entry at the write (fitPool), and not before.
    store::Pool more = p;
    more.allocations[8191] = p.allocations.at(1);
    more.allocations[8191].containerId = std::string(64, 'f');
    CHECK(store::fitPool(more, "kube-system", tight).code() == core::Errc::TooLarge);
    tight.maxBytes = wb + 400;  // room for one more
    CHECK(!store::cannotGrow(p, "kube-system", tight));
}

TEST_CASE("reservations round-trip in Whereabouts' format") {
    store::Reservation r{"10.0.0.5", "ctr", "ns/p", "eth0", ""};
    auto v = store::encodeReservation(r, "kube-system");
    CHECK(v.find("spec")->find("podref")->asString() == "ns/p");
    auto back = store::decodeReservation(v);
    REQUIRE(back.ok());
    CHECK(back->containerId == "ctr");
    auto wb = store::decodeReservation(
        *json::parse(R"({"metadata":{"name":"fd00--1"},"spec":{"podref":"ns/x"}})"));
    REQUIRE(wb.ok());
    CHECK(wb->containerId.empty());
}

TEST_CASE("a key written twice keeps its last entry, and tricky pools re-encode stably") {
    auto p = store::decodePool(*json::parse(R"({"spec":{"range":"10.0.0.0/24","allocations":{
        "9":{"podref":"a/first"},"9":{"id":"second","podref":"a/s"},
        "4":{"id":"first","podref":"a/f"},"4":{"podref":"a/no-id"},
        "7":{"id":"seven","podref":"a/7"},"007":{"id":"z","podref":"a/f"}}}})"));
    REQUIRE(p.ok());
    CHECK(p->allocations.at(9).containerId == "second");
    CHECK(p->undecoded.count("9") == 0);
    CHECK(store::isPlaceholder(p->allocations.at(4)));
    CHECK(p->undecoded.count("4") == 1);
    CHECK(p->allocations.at(7).containerId == "seven");
    CHECK(p->undecoded.count("007") == 1);
    const std::string once = store::encodePool(*p, "ns").dump();
    auto back = store::decodePool(*json::parse(once));
    REQUIRE(back.ok());
    CHECK(store::encodePool(*back, "ns").dump() == once);
}

TEST_CASE("the release log rides in an annotation beside the others, and round-trips") {
    auto v = json::parse(R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool",
      "metadata":{"name":"p","namespace":"kube-system","resourceVersion":"4",
        "annotations":{"team":"a","allot.cni.cncf.io/released":"{\"keep\":30,\"at\":{\"5\":1700000000}}"}},
      "spec":{"range":"10.0.0.0/24","allocations":{}}})");
    REQUIRE(v.ok());
    auto p = store::decodePool(*v);
    REQUIRE(p.ok());
    CHECK(p->released == core::ReleaseLog{30, {{5, 1700000000}}});
    CHECK(p->meta.find("annotations")->find(store::kReleasedAnnotation) == nullptr);
    auto text = store::encodePool(*p, "kube-system").dump();
    auto back = store::decodePool(*json::parse(text));
    REQUIRE(back.ok());
    CHECK(back->released == p->released);
    CHECK(back->meta.find("annotations")->find("team")->asString() == "a");
}

TEST_CASE("a pool without a release log gets no annotation and no reason") {
    store::Pool p{"n", "10.0.0.0/24", {}, "9"};
    CHECK(store::encodePool(p, "ns").dump().find("annotations") == std::string::npos);
    auto back = store::decodePool(*json::parse(store::encodePool(p, "ns").dump()));
    REQUIRE(back.ok());
    CHECK(back->releasedUnreadable.empty());
}

TEST_CASE("an unreadable release log reads empty with the reason, and is kept verbatim") {
    for (const char* bad :
         {R"("not json")", R"("[1,2]")", R"("{\"keep\":0,\"at\":{}}")", R"({"keep":30})"}) {
        const std::string shown = bad;
        CAPTURE(shown);
        auto v = json::parse(std::string(R"({"metadata":{"name":"p","namespace":"ns",
          "resourceVersion":"4","annotations":{"allot.cni.cncf.io/released":)") +
                             bad + R"(}},"spec":{"range":"10.0.0.0/24","allocations":{}}})");
        REQUIRE(v.ok());
        auto back = store::decodePool(*v);
        REQUIRE(back.ok());
        CHECK(back->released == core::ReleaseLog{});
        CHECK(back->releasedUnreadable.find("allot.cni.cncf.io/released cannot be read (") !=
              std::string::npos);
        // Written back unchanged (a write with a cooldown replaces it).
        const std::string out = store::encodePool(*back, "ns").dump();
        CHECK(json::parse(out)
                  ->find("metadata")
                  ->find("annotations")
                  ->find(store::kReleasedAnnotation)
                  ->dump() == json::parse(bad)->dump());
    }
}

TEST_CASE("an entry's IPAMClaim owner round-trips as ipamclaim and survives the size policy") {
    store::Pool p{"n", "10.0.0.0/16", {}, "9"};
    core::Owner o{"c", "ns/p", "net1", "node-a", "uid", "net"};
    o.claim = "ns/vm-a.net1";
    p.allocations[5] = o;
    auto text = store::encodePool(p, "ns").dump();
    CHECK(text.find(R"("ipamclaim":"ns/vm-a.net1")") != std::string::npos);
    auto back = store::decodePool(*json::parse(text));
    REQUIRE(back.ok());
    CHECK(back->allocations.at(5).claim == "ns/vm-a.net1");
    // A policy that strips every optional field keeps the claim.
    store::SizePolicy tight;
    tight.freeBytes = 0;
    tight.ratioTenths = 10;
    auto fitted = store::fitPool(p, "ns", tight);
    REQUIRE(fitted.ok());
    CHECK(p.allocations.at(5).node.empty());
    CHECK(p.allocations.at(5).claim == "ns/vm-a.net1");
}

// Whereabouts' own IPPool schema keeps only id, podref and ifname of an entry.
json::Value pruned(json::Value obj) {
    for (auto& [k, e] : obj.find("spec")->find("allocations")->members()) {
        json::Value kept = json::Value::object();
        for (const char* f : {"id", "podref", "ifname"})
            if (const json::Value* v = e.find(f)) kept.set(f, *v);
        e = std::move(kept);
    }
    return obj;
}

TEST_CASE("a claim owner outlives a schema that prunes ipamclaim: the annotation names it") {
    store::Pool p{"n", "10.0.0.0/24", {}, "9"};
    core::Owner claimed{"c", "ns/p", "net1", "node-a", "uid", "net"};
    claimed.claim = "ns/vm-a.net1";
    p.allocations[5] = claimed;
    p.allocations[6] = core::Owner{"d", "ns/q", "net1", "node-a", "uid-q", "net"};
    auto back = store::decodePool(pruned(store::encodePool(p, "ns")));
    REQUIRE(back.ok());
    CHECK(back->allocations.at(5).claim == "ns/vm-a.net1");
    CHECK(back->allocations.at(5).node.empty());
    CHECK(back->allocations.at(6).claim.empty());
    // The annotation leaves the kept metadata: the pool holds it as its entries' claims.
    CHECK((back->meta.isNull() || back->meta.find("annotations") == nullptr));
    // Written again as it was read: the same annotation, and no other.
    auto again = store::encodePool(*back, "ns");
    CHECK(again.find("metadata")->find("annotations")->find(store::kClaimsAnnotation)->asString() ==
          R"({"5":{"id":"c","claim":"ns/vm-a.net1"}})");
    // A writer that knows nothing of it (Whereabouts) frees offset 5 and gives it to another
    // container: the note no longer applies, and allot's next write drops it.
    auto reused = again;
    reused.find("spec")
        ->find("allocations")
        ->set("5", *json::parse(R"({"id":"other","podref":"ns/r","ifname":"net1"})"));
    auto r = store::decodePool(reused);
    REQUIRE(r.ok());
    CHECK(r->allocations.at(5).claim.empty());
    CHECK(store::encodePool(*r, "ns").dump().find(store::kClaimsAnnotation) == std::string::npos);
    // An unreadable annotation claims nothing and is not kept.
    auto bad = again;
    bad.find("metadata")
        ->find("annotations")
        ->set(store::kClaimsAnnotation, json::Value::string("{not json"));
    auto b = store::decodePool(pruned(bad));
    REQUIRE(b.ok());
    CHECK(b->allocations.at(5).claim.empty());
    CHECK(store::encodePool(*b, "ns").dump().find(store::kClaimsAnnotation) == std::string::npos);
}

TEST_CASE(
    "a slice pool's seal rides in an annotation, round-trips, and an unsealed pool has none") {
    auto v = json::parse(R"({"metadata":{"name":"p","namespace":"ns","resourceVersion":"4",
        "annotations":{"team":"a","allot.cni.cncf.io/slice-sealed":"1234"}},
      "spec":{"range":"10.0.0.0/24","allocations":{}}})");
    auto p = store::decodePool(*v);
    REQUIRE(p.ok());
    CHECK(p->sealed == "1234");
    CHECK(p->meta.find("annotations")->find(store::kSealedAnnotation) == nullptr);
    auto back = store::decodePool(store::encodePool(*p, "ns"));
    REQUIRE(back.ok());
    CHECK(back->sealed == "1234");
    back->sealed.clear();
    auto lifted = store::decodePool(store::encodePool(*back, "ns"));
    CHECK(lifted->sealed.empty());
    CHECK(lifted->meta.find("annotations")->find("team")->asString() == "a");
    // A seal allot cannot read still seals.
    auto odd = store::decodePool(*json::parse(R"({"metadata":{"name":"p","namespace":"ns",
        "resourceVersion":"4","annotations":{"allot.cni.cncf.io/slice-sealed":7}},
      "spec":{"range":"10.0.0.0/24","allocations":{}}})"));
    CHECK_FALSE(odd->sealed.empty());
}

TEST_CASE(
    "pools decoded while their list is parsed equal decodePool's, and no entry stays in the tree") {
    const std::string pools[] = {
        R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool","metadata":{"name":"a",
          "namespace":"ns","resourceVersion":"5","labels":{"x":"y"},"annotations":
          {"allot.cni.cncf.io/released":"{\"keep\":60,\"at\":{\"3\":1700000000}}"},
          "managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:allocations":{"f:1":{}}}}}]},
          "status":{"s":1},"spec":{"allocations":{"1":{"id":"c1","podref":"n/p","ifname":"net1",
          "poduid":"u","node":"n1","network":"net","ipamclaimref":"n/c"},"2":{"id":"c2"},
          "9":{"podref":"a/first"},"9":{"id":"second","podref":"a/s"},"4":{"id":"first"},
          "4":{"podref":"a/no-id"},"007":{"id":"z"},"x":{"id":"y"}},"range":"10.0.0.0/24",
          "extra":true}})",
        R"({"metadata":{"name":"b","resourceVersion":"6","managedFields":null},
          "spec":{"range":"10.1.0.0/24"}})",
        R"({"metadata":{"name":"bad","resourceVersion":"7"},"spec":{"range":"10.2.0.0/24",
          "allocations":[{"id":"c"}]}})",
    };
    std::string page = R"({"metadata":{"resourceVersion":"8"},"items":[)";
    for (const auto& p : pools) page += (page.back() == '[' ? "" : ",") + p;
    page += "]}";
    store::PoolStreamDecoder decoder;
    size_t i = 0;
    std::vector<json::Tap> taps{{{"items", "[]"}, [&](const std::string&, json::Value& item) {
                                     CHECK(item.dump().find("\"c2\"") == std::string::npos);
                                     auto got = decoder.finish(item);
                                     auto want = store::decodePool(*json::parse(pools[i++]));
                                     REQUIRE(got.ok() == want.ok());
                                     if (!want) {
                                         CHECK(got.error().message == want.error().message);
                                         return true;
                                     }
                                     CHECK(got->allocations == want->allocations);
                                     CHECK(got->undecoded.size() == want->undecoded.size());
                                     CHECK(got->stored.bytes == want->stored.bytes);
                                     CHECK(got->stored.overhead == want->stored.overhead);
                                     CHECK(got->released == want->released);
                                     CHECK(store::encodePool(*got, "ns").dump() ==
                                           store::encodePool(*want, "ns").dump());
                                     return true;
                                 }}};
    for (auto& t : decoder.taps()) {
        t.path.insert(t.path.begin(), {"items", "[]"});
        taps.push_back(std::move(t));
    }
    auto rest = json::parse(page, taps);
    REQUIRE(rest.ok());
    CHECK(rest->dump() == R"({"metadata":{"resourceVersion":"8"},"items":[]})");
    CHECK(i == 3);
}

TEST_CASE("a write's answer gives the pool sent, with the server's metadata, and no spec decoded") {
    store::Pool sent{"10.0.0.0-24", "10.0.0.0/24", {}, "41"};
    sent.allocations[5] = core::Owner{"c5", "ns/p", "net1", "node-a", "uid5", "net"};
    sent.released.keepS = 30;
    sent.released.at[9] = 1700000000;
    const std::string text = store::encodePool(sent, "kube-system").dump();
    // The server's answer: a new resourceVersion, fields it sets, managedFields; its spec is
    // not read (here it differs from what was sent, which a real server never does).
    auto answerText =
        R"({"apiVersion":"whereabouts.cni.cncf.io/v1alpha1","kind":"IPPool","metadata":{
        "annotations":{"allot.cni.cncf.io/released":"{\"keep\":30,\"at\":{\"9\":1700000000}}"},
        "generation":3,"managedFields":[{"manager":"allot","operation":"Update"}],
        "name":"10.0.0.0-24","namespace":"kube-system","resourceVersion":"42","uid":"u-1"},
        "spec":{"range":"10.0.0.0/24","allocations":{"6":{"id":"other","podref":"ns/q"}}}})";
    store::PoolWriteDecoder answer;
    auto tree = json::parse(answerText, answer.taps());
    REQUIRE(tree.ok());
    CHECK(tree->find("spec") == nullptr);  // skipped while parsed, never built
    auto got = answer.finish(sent, text, store::poolSize(sent, "kube-system"), *tree);
    REQUIRE(got.ok());
    CHECK(got->resourceVersion == "42");
    CHECK(got->allocations == sent.allocations);
    CHECK(got->released == sent.released);
    CHECK(got->written == text);
    const std::string managed = R"([{"manager":"allot","operation":"Update"}])";
    CHECK(got->stored.overhead == managed.size() + std::string(",\"managedFields\":").size());
    CHECK(got->stored.entries == 1);
    // What a read of that object decodes to, apart from the entry the test's answer changed.
    auto read = store::decodePool(*json::parse(answerText));
    REQUIRE(read.ok());
    CHECK(got->meta == read->meta);
    CHECK(got->stored.overhead == read->stored.overhead);
}

TEST_CASE("a write's answer without a resourceVersion, or not an object, is Invalid") {
    store::Pool sent{"p", "10.0.0.0/24", {}, "41"};
    for (const char* text : {R"({"metadata":{"name":"p"},"spec":{}})", "[]",
                             R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1"})"}) {
        store::PoolWriteDecoder answer;
        auto tree = json::parse(text, answer.taps());
        REQUIRE(tree.ok());
        auto got = answer.finish(sent, "{}", store::poolSize(sent, ""), *tree);
        REQUIRE_FALSE(got.ok());
        CHECK(got.code() == core::Errc::Invalid);
    }
}
