#include "k8s_api/resources.h"

#include <doctest/doctest.h>

using namespace allot::k8s;

TEST_CASE("resource paths follow the API server's layout for core and grouped resources") {
    CHECK(collectionPath(kIPPool, "kube-system") ==
          "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools");
    CHECK(objectPath(kOverlappingRangeIPReservation, "kube-system", "10.0.0.5") ==
          "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/"
          "overlappingrangeipreservations/10.0.0.5");
    CHECK(objectPath(kNodeSlicePool, "ns", "pool") ==
          "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/ns/nodeslicepools/pool");
    CHECK(objectPath(kPod, "default", "web-0") == "/api/v1/namespaces/default/pods/web-0");
    CHECK(collectionPath(kPod, "") == "/api/v1/pods");
    CHECK(objectPath(kNetworkAttachmentDefinition, "default", "macvlan") ==
          "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions/macvlan");
    CHECK(collectionPath(kEvent, "default") == "/api/v1/namespaces/default/events");
    CHECK(objectPath(kLease, "kube-system", "allot-gc") ==
          "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/allot-gc");
}

TEST_CASE("apiVersion omits the group for the core group") {
    CHECK(apiVersion(kPod) == "v1");
    CHECK(apiVersion(kIPPool) == "whereabouts.cni.cncf.io/v1alpha1");
    CHECK(apiVersion(kLease) == "coordination.k8s.io/v1");
}

TEST_CASE("names and namespaces are URL-escaped so they cannot change the path") {
    CHECK(objectPath(kPod, "a/b", "x?y=1#z") == "/api/v1/namespaces/a%2Fb/pods/x%3Fy%3D1%23z");
    CHECK(urlEscape("fd00::1-64") == "fd00%3A%3A1-64");
    CHECK(urlEscape("spec.nodeName=node 1,a!=b") == "spec.nodeName%3Dnode%201%2Ca%21%3Db");
    CHECK(urlEscape("AZaz09-._~") == "AZaz09-._~");
}
