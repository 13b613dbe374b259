#include "k8s/status.h"

#include <doctest/doctest.h>

#include <string>

using allot::core::Errc;
using allot::k8s::mapStatus;

namespace {

std::string statusBody(int code, const std::string& reason, const std::string& message) {
    return R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":")" + message +
           R"(","reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
}

bool mentions(const allot::core::Error& e, const std::string& s) {
    return e.message.find(s) != std::string::npos;
}

const std::string kPath = "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/kube-system/ippools/p";
const std::string kWho = "user \"robot\" of context \"x\"";

}  // namespace

TEST_CASE("a 2xx status is not an error") {
    CHECK_FALSE(mapStatus(200, "{}", "get", kPath, kWho).has_value());
    CHECK_FALSE(mapStatus(201, "", "create", kPath, kWho).has_value());
}

TEST_CASE("401 is Unauthorized naming the verb, the resource and who we claimed to be") {
    auto e = mapStatus(401, statusBody(401, "Unauthorized", "Unauthorized"), "get", kPath, kWho);
    REQUIRE(e);
    CHECK(e->code == Errc::Unauthorized);
    CHECK(mentions(*e, "get " + kPath));
    CHECK(mentions(*e, kWho));
    CHECK(mentions(*e, "expired or invalid"));
}

TEST_CASE("403 is Forbidden carrying the API server's explanation") {
    const std::string msg =
        "ippools.whereabouts.cni.cncf.io \\\"p\\\" is forbidden: User \\\"system:serviceaccount:"
        "kube-system:allot\\\" cannot update resource \\\"ippools\\\"";
    auto e = mapStatus(403, statusBody(403, "Forbidden", msg), "update", kPath, kWho);
    REQUIRE(e);
    CHECK(e->code == Errc::Forbidden);
    CHECK(mentions(*e, "cannot update resource \"ippools\""));
    CHECK(mentions(*e, "system:serviceaccount:kube-system:allot"));
}

TEST_CASE("404 is NotFound") {
    auto e = mapStatus(404, statusBody(404, "NotFound", "ippools \\\"p\\\" not found"), "get",
                       kPath, kWho);
    REQUIRE(e);
    CHECK(e->code == Errc::NotFound);
    CHECK(mentions(*e, "ippools \"p\" not found"));
}

TEST_CASE("409 is AlreadyExists only when the Status reason says so, else Conflict") {
    auto exists =
        mapStatus(409, statusBody(409, "AlreadyExists", "already exists"), "create", kPath, kWho);
    REQUIRE(exists);
    CHECK(exists->code == Errc::AlreadyExists);

    auto conflict = mapStatus(
        409, statusBody(409, "Conflict", "the object has been modified; please apply your changes"),
        "update", kPath, kWho);
    REQUIRE(conflict);
    CHECK(conflict->code == Errc::Conflict);
    CHECK(mentions(*conflict, "the object has been modified"));

    auto bare = mapStatus(409, "", "update", kPath, kWho);
    REQUIRE(bare);
    CHECK(bare->code == Errc::Conflict);
}

TEST_CASE("410 is Expired and 422 is Invalid") {
    auto gone =
        mapStatus(410, statusBody(410, "Expired", "too old resource version"), "list", kPath, kWho);
    REQUIRE(gone);
    CHECK(gone->code == Errc::Expired);
    auto invalid = mapStatus(422, statusBody(422, "Invalid", "spec.range: Invalid value"), "create",
                             kPath, kWho);
    REQUIRE(invalid);
    CHECK(invalid->code == Errc::Invalid);
    CHECK(mentions(*invalid, "spec.range"));
}

TEST_CASE("etcd refusing an object over its request limit is TooLarge, not worth a retry") {
    auto e = mapStatus(500, statusBody(500, "InternalError", "etcdserver: request is too large"),
                       "update", kPath, kWho);
    REQUIRE(e);
    CHECK(e->code == Errc::TooLarge);
    CHECK(mentions(*e, "too large for etcd"));
}

TEST_CASE("429 and 5xx are Transient and keep the Retry-After hint") {
    for (long status : {429L, 500L, 502L, 503L, 504L}) {
        CAPTURE(status);
        auto e = mapStatus(status, statusBody(static_cast<int>(status), "TooManyRequests", "slow"),
                           "get", kPath, kWho, 3);
        REQUIRE(e);
        CHECK(e->code == Errc::Transient);
        CHECK(mentions(*e, "retry after 3s"));
    }
    auto noHint = mapStatus(503, "", "get", kPath, kWho);
    REQUIRE(noHint);
    CHECK(noHint->code == Errc::Transient);
    CHECK_FALSE(mentions(*noHint, "retry after"));
}

TEST_CASE("other statuses are Internal") {
    for (long status : {400L, 405L, 415L, 301L}) {
        CAPTURE(status);
        auto e = mapStatus(status, statusBody(static_cast<int>(status), "BadRequest", "bad"),
                           "patch", kPath, kWho);
        REQUIRE(e);
        CHECK(e->code == Errc::Internal);
        CHECK(mentions(*e, std::to_string(status)));
    }
}

TEST_CASE("a non-JSON error body is summarised, not dumped whole") {
    const std::string html =
        "<html>\r\n<body>502 Bad Gateway</body></html>" + std::string(5000, 'x');
    auto e = mapStatus(502, html, "get", kPath, kWho);
    REQUIRE(e);
    CHECK(e->code == Errc::Transient);
    CHECK(mentions(*e, "502 Bad Gateway"));
    CHECK(e->message.size() < 600);
    CHECK(e->message.find('\r') == std::string::npos);
}

TEST_CASE("the query string is left out of error messages") {
    auto e = mapStatus(404, "", "list", kPath + "?labelSelector=a%3Db&continue=tok", kWho);
    REQUIRE(e);
    CHECK_FALSE(mentions(*e, "continue"));
    CHECK(mentions(*e, kPath));
}
