#include "gc-sidecar/node/cri_runtime.h"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>

#include "../../temp_dir.h"
#include "sys/fd.h"

using namespace allot;
using namespace std::chrono_literals;
using core::RuntimeAnswer;

namespace {

const std::string kId = "5f1c3e0d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d";

// Protobuf wire bytes, built by hand from the encoding rules (not with the code under test).
std::string varint(uint64_t v) {
    std::string out;
    for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>(v | 0x80));
    out.push_back(static_cast<char>(v));
    return out;
}
std::string key(uint32_t field, uint8_t wireType) {
    return varint(uint64_t{field} << 3 | wireType);
}
std::string bytesField(uint32_t field, const std::string& value) {
    return key(field, 2) + varint(value.size()) + value;
}
std::string varintField(uint32_t field, uint64_t value) {
    return key(field, 0) + varint(value);
}
// PodSandboxStatusResponse{status: PodSandboxStatus{...inner}}.
std::string response(const std::string& inner) {
    return bytesField(1, inner);
}

// A unix socket bound at `path`: listening (its backlog takes connections nobody accepts) or
// not (a connection is refused).
sys::Fd unixSocket(const std::string& path, bool listening) {
    sys::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(fd);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    if (listening) REQUIRE(::listen(fd.get(), 8) == 0);
    return fd;
}

std::unique_ptr<gc::CriRuntime> openRuntime(const std::string& path,
                                            std::chrono::milliseconds timeout = 2s) {
    auto rt = gc::CriRuntime::open(path, timeout);
    REQUIRE(rt.ok());
    return std::move(*rt);
}

bool has(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("a PodSandboxStatus request carries the sandbox ID as field 1 and no verbose flag") {
    CHECK(gc::encodeSandboxStatusRequest("abc") == std::string("\x0a\x03"
                                                               "abc"));
    const std::string req = gc::encodeSandboxStatusRequest(kId);
    REQUIRE(req.size() == 2 + kId.size());
    CHECK(req.substr(0, 2) == std::string("\x0a\x40"));
    CHECK(req.substr(2) == kId);
}

TEST_CASE("a sandbox whose status has no state field is READY, proto3's default") {
    auto s = gc::decodeSandboxStatusResponse(response(bytesField(1, kId)));
    REQUIRE(s.ok());
    CHECK(s->state == RuntimeAnswer::Ready);
    CHECK(s->id == kId);
    // An empty status message is READY too (and names no sandbox).
    auto empty = gc::decodeSandboxStatusResponse(response(""));
    REQUIRE(empty.ok());
    CHECK(empty->state == RuntimeAnswer::Ready);
    CHECK(empty->id.empty());
}

TEST_CASE("state 1 is NOTREADY, and an explicit 0 is READY") {
    auto notReady =
        gc::decodeSandboxStatusResponse(response(bytesField(1, kId) + varintField(3, 1)));
    REQUIRE(notReady.ok());
    CHECK(notReady->state == RuntimeAnswer::NotReady);
    auto ready = gc::decodeSandboxStatusResponse(response(varintField(3, 0)));
    REQUIRE(ready.ok());
    CHECK(ready->state == RuntimeAnswer::Ready);
}

TEST_CASE("fields allot does not read are skipped, whatever their wire type") {
    // PodSandboxStatus: metadata (2, a message), created_at (4), labels (7, map entries), and
    // fields of a later API: fixed64 (1), fixed32 (5), a large field number.
    const std::string metadata = bytesField(1, "web-0") + bytesField(3, "default");
    const std::string inner = bytesField(2, metadata) + varintField(4, 1732800000000000000ull) +
                              bytesField(7, bytesField(1, "app") + bytesField(2, "web")) +
                              key(40, 1) + std::string(8, '\xff') + key(41, 5) +
                              std::string(4, '\x01') + varintField(3, 1) + bytesField(1, kId) +
                              varintField(536870911, 7);
    // The response: info (2, a map), containers_statuses (3), timestamp (4) around the status.
    const std::string payload = bytesField(2, bytesField(1, "k") + bytesField(2, "{}")) +
                                response(inner) + bytesField(3, bytesField(1, "ctr")) +
                                varintField(4, 12345);
    auto s = gc::decodeSandboxStatusResponse(payload);
    REQUIRE(s.ok());
    CHECK(s->state == RuntimeAnswer::NotReady);
    CHECK(s->id == kId);
}

TEST_CASE("a response without status, or with a state allot does not know, is an error") {
    auto none = gc::decodeSandboxStatusResponse("");
    REQUIRE_FALSE(none.ok());
    CHECK(none.code() == core::Errc::Decode);
    CHECK(has(none.error().message, "no status"));
    CHECK_FALSE(gc::decodeSandboxStatusResponse(varintField(4, 1)).ok());
    auto state = gc::decodeSandboxStatusResponse(response(varintField(3, 2)));
    REQUIRE_FALSE(state.ok());
    CHECK(has(state.error().message, "sandbox state 2"));
    // The right numbers with the wrong wire types.
    CHECK_FALSE(gc::decodeSandboxStatusResponse(varintField(1, 1)).ok());
    CHECK_FALSE(gc::decodeSandboxStatusResponse(response(bytesField(3, "1"))).ok());
    CHECK_FALSE(gc::decodeSandboxStatusResponse(response(varintField(1, 5))).ok());
}

TEST_CASE("every truncation of a response is an error, never a READY") {
    const std::string full =
        response(bytesField(1, kId) + bytesField(2, bytesField(1, "web-0")) + varintField(3, 1));
    REQUIRE(gc::decodeSandboxStatusResponse(full).ok());
    for (size_t n = 0; n < full.size(); ++n) {
        CAPTURE(n);
        CHECK_FALSE(gc::decodeSandboxStatusResponse(full.substr(0, n)).ok());
    }
}

TEST_CASE("malformed wire bytes are errors: overlong varints, huge lengths, groups, field 0") {
    const std::string bad[] = {
        std::string(11, '\xff'),                                      // a varint past 10 bytes
        key(1, 2) + std::string(9, '\xff') + std::string("\x01", 1),  // a length of 2^63+
        key(1, 2) + varint(1ull << 40) + "ab",                        // a length past the input
        key(1, 3) + key(1, 4),                                        // a group
        key(1, 7),                                                    // no such wire type
        std::string("\x00\x00", 2),                                   // field number 0
        response(key(3, 0)),                                          // a key without its value
        response(std::string(10, '\x80') + std::string("\x01", 1)),   // an 11-byte key
    };
    for (size_t i = 0; i < std::size(bad); ++i) {
        CAPTURE(i);
        auto s = gc::decodeSandboxStatusResponse(bad[i]);
        REQUIRE_FALSE(s.ok());
        CHECK(s.code() == core::Errc::Decode);
        // The last two are well-formed outside: a VersionResponse with a string field 1.
        if (i + 2 < std::size(bad)) CHECK_FALSE(gc::decodeVersionResponse(bad[i]).ok());
    }
}

TEST_CASE("random bytes never crash the decoders") {
    std::mt19937 rng(20241128);
    std::uniform_int_distribution<int> len(0, 64), byte(0, 255);
    int accepted = 0;
    for (int i = 0; i < 20000; ++i) {
        std::string b(static_cast<size_t>(len(rng)), '\0');
        for (char& c : b) c = static_cast<char>(byte(rng));
        if (i % 2) b = response(b);  // reach the inner message's decoder too
        auto s = gc::decodeSandboxStatusResponse(b);
        if (s.ok()) ++accepted;
        (void)gc::decodeVersionResponse(b);
    }
    // Well-formed by chance happens, but rarely: most garbage must be refused.
    CHECK(accepted < 20000 / 4);
}

TEST_CASE("a Version request and response carry the four version strings") {
    CHECK(gc::encodeVersionRequest("v1") == std::string("\x0a\x02v1"));
    const std::string payload = bytesField(1, "0.1.0") + bytesField(2, "containerd") +
                                bytesField(3, "1.6.20~ds1") + bytesField(4, "v1") +
                                varintField(9, 3);
    auto v = gc::decodeVersionResponse(payload);
    REQUIRE(v.ok());
    CHECK(v->version == "0.1.0");
    CHECK(v->runtimeName == "containerd");
    CHECK(v->runtimeVersion == "1.6.20~ds1");
    CHECK(v->runtimeApiVersion == "v1");
    CHECK_FALSE(gc::decodeVersionResponse(varintField(2, 1)).ok());
}

TEST_CASE("a runtime endpoint is a unix socket path, with or without unix://") {
    CHECK(*gc::criSocketPath("unix:///run/containerd/containerd.sock") ==
          "/run/containerd/containerd.sock");
    CHECK(*gc::criSocketPath("/var/run/crio/crio.sock") == "/var/run/crio/crio.sock");
    for (const char* bad : {"", "unix://", "run/containerd.sock", "tcp://127.0.0.1:1234",
                            "npipe:////./pipe/containerd"}) {
        CAPTURE(bad);
        auto p = gc::criSocketPath(bad);
        REQUIRE_FALSE(p.ok());
        CHECK(p.code() == core::Errc::InvalidConfig);
    }
    CHECK_FALSE(gc::criSocketPath("/" + std::string(107, 'a')).ok());
    CHECK(gc::CriRuntime::open("tcp://127.0.0.1:1", 1s).code() == core::Errc::InvalidConfig);
    CHECK(gc::CriRuntime::open("/run/x.sock", 0ms).code() == core::Errc::InvalidConfig);
}

TEST_CASE("a runtime socket nobody listens on makes the answer Unknown, saying why") {
    test::TempDir dir;
    // No socket at all, then a socket bound with no listener (connections are refused).
    const std::string missing = (dir.path / "missing.sock").string();
    const std::string refusing = (dir.path / "refusing.sock").string();
    sys::Fd bound = unixSocket(refusing, false);
    for (const std::string& path : {missing, refusing}) {
        CAPTURE(path);
        auto rt = openRuntime("unix://" + path);
        std::string detail = "stale";
        CHECK(rt->sandboxState(kId, &detail) == RuntimeAnswer::Unknown);
        CHECK(has(detail, path));
        CHECK(has(detail, "PodSandboxStatus"));
        CHECK(rt->sandboxState(kId) == RuntimeAnswer::Unknown);  // no detail wanted
        auto v = rt->version();
        REQUIRE_FALSE(v.ok());
        CHECK(v.code() == core::Errc::Transient);
    }
}

TEST_CASE("a runtime that takes the connection and never answers is Unknown within the timeout") {
    test::TempDir dir;
    const std::string path = (dir.path / "silent.sock").string();
    sys::Fd listening = unixSocket(path, true);  // never accepts: the backlog takes the call
    auto rt = openRuntime(path, 300ms);
    const auto start = std::chrono::steady_clock::now();
    std::string detail;
    CHECK(rt->sandboxState(kId, &detail) == RuntimeAnswer::Unknown);
    CHECK(std::chrono::steady_clock::now() - start < 3s);
    CHECK(has(detail, path));
}

TEST_CASE("a malformed sandbox ID is Unknown without asking the runtime") {
    test::TempDir dir;
    auto rt = openRuntime((dir.path / "missing.sock").string());
    for (const std::string& id :
         {std::string(), std::string(257, 'a'), std::string("a b"), std::string("a\nb")}) {
        CAPTURE(id.size());
        std::string detail;
        CHECK(rt->sandboxState(id, &detail) == RuntimeAnswer::Unknown);
        CHECK(has(detail, "is not a sandbox ID"));
        CHECK_FALSE(has(detail, "missing.sock"));  // not a connection failure: nothing was sent
    }
}
