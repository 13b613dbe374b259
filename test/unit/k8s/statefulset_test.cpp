#include "k8s/statefulset.h"

#include <doctest/doctest.h>

#include "parsed.h"

using namespace allot;

using test::obj;

TEST_CASE("a pod's controlling StatefulSet is read from its ownerReferences") {
    auto pod = obj(R"({"metadata":{"namespace":"shop","name":"web-0","ownerReferences":[
        {"apiVersion":"v1","kind":"ConfigMap","name":"x","uid":"u9"},
        {"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"set-uid","controller":true}]}})");
    auto set = k8s::controllingStatefulSet(pod);
    REQUIRE(set.has_value());
    CHECK(*set == core::StatefulSetRef{"shop", "web", "set-uid"});
    // What the relay answers with reads back the same.
    auto md = json::Value::object();
    md.set("namespace", json::Value::string("shop"));
    auto refs = json::Value::array();
    refs.push(k8s::statefulSetOwnerReference(*set));
    md.set("ownerReferences", std::move(refs));
    auto answer = json::Value::object();
    answer.set("metadata", std::move(md));
    CHECK(k8s::controllingStatefulSet(answer) == set);
}

TEST_CASE("a pod without a StatefulSet controller, or with a malformed one, has none") {
    for (
        const char* text : {
            R"({"metadata":{"namespace":"shop","name":"p"}})",
            R"({"metadata":{"namespace":"shop","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u","controller":true}]}})",
            R"({"metadata":{"namespace":"shop","ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"u"}]}})",
            R"({"metadata":{"namespace":"shop","ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","controller":true}]}})",
            R"({"metadata":{"namespace":"shop","ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"a/b","controller":true}]}})",
            R"({"metadata":{"namespace":"shop","ownerReferences":"web"}})",
            R"({"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"u","controller":true}]}})",
            R"([])",
        }) {
        CAPTURE(text);
        CHECK_FALSE(k8s::controllingStatefulSet(obj(text)).has_value());
    }
}

TEST_CASE("a StatefulSet's UID, deletion, replicas and ordinals are read with their defaults") {
    auto v = k8s::statefulSetView(obj(R"({"metadata":{"uid":"u1"},"spec":{}})"));
    REQUIRE(v.ok());
    CHECK(v->uid == "u1");
    CHECK_FALSE(v->deleting);
    CHECK(v->replicas == 1);
    CHECK(v->ordinalsStart == 0);
    v = k8s::statefulSetView(
        obj(R"({"metadata":{"uid":"u1","deletionTimestamp":"2026-11-25T00:00:00Z"},
        "spec":{"replicas":0,"ordinals":{"start":5}}})"));
    REQUIRE(v.ok());
    CHECK(v->deleting);
    CHECK(v->replicas == 0);
    CHECK(v->ordinalsStart == 5);
    CHECK(k8s::statefulSetView(obj(R"({"metadata":{"uid":"u1"},"spec":{"replicas":"3"}})"))
              .error()
              .message.find("spec.replicas") != std::string::npos);
    CHECK(k8s::statefulSetView(obj(R"({"metadata":{"uid":"u1"},"spec":{"ordinals":{"start":-1}}})"))
              .error()
              .message.find("spec.ordinals.start") != std::string::npos);
    CHECK_FALSE(k8s::statefulSetView(obj(R"({"metadata":{}})")).ok());
}
