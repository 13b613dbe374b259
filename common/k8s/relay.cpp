#include "k8s/relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace allot::k8s {

using Kind = TransportError::Kind;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kMagic[4] = {'A', 'L', 'R', '1'};
constexpr char kMagicAck[4] = {'A', 'L', 'R', '2'};     // a request that wants an Accepted frame
constexpr char kMagicAccept[4] = {'A', 'L', 'R', '3'};  // as ALR2, with an Accept field last

void putU32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void putStr(std::string& out, std::string_view s) {
    putU32(out, static_cast<uint32_t>(s.size()));
    out.append(s);
}

// Reads fields in order; any overrun makes the whole frame invalid.
struct Reader {
    std::string_view in;
    bool ok = true;
    uint32_t u32() {
        if (in.size() < 4) {
            ok = false;
            return 0;
        }
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i)
            v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
        in.remove_prefix(4);
        return v;
    }
    std::string str() {
        uint32_t n = u32();
        if (!ok || in.size() < n) {
            ok = false;
            return {};
        }
        std::string s(in.substr(0, n));
        in.remove_prefix(n);
        return s;
    }
    bool magic() {
        if (in.size() < 4 || in.substr(0, 4) != std::string_view(kMagic, 4)) return ok = false;
        in.remove_prefix(4);
        return true;
    }
    // Any request magic: whether it wants an acknowledgement, and carries an Accept.
    std::pair<bool, bool> requestMagic() {
        for (const char* m : {kMagicAck, kMagicAccept})
            if (in.size() >= 4 && in.substr(0, 4) == std::string_view(m, 4)) {
                in.remove_prefix(4);
                return {true, m == kMagicAccept};
            }
        magic();
        return {false, false};
    }
};

int msLeft(Clock::time_point deadline) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

TransportError failed(Kind kind, std::string message) {
    return TransportError{kind, std::move(message)};
}

core::Result<void, TransportError> waitFor(int fd, short events, Clock::time_point deadline,
                                           const char* what) {
    for (;;) {
        pollfd p{fd, events, 0};
        int rc = ::poll(&p, 1, msLeft(deadline));
        if (rc > 0) return {};
        if (rc == 0) return failed(Kind::Timeout, std::string("node relay: timed out ") + what);
        if (errno != EINTR)
            return failed(Kind::Connect, std::string("node relay: poll: ") + std::strerror(errno));
    }
}

bool segment(std::string_view& path, std::string_view want) {
    if (path.substr(0, want.size()) != want) return false;
    path.remove_prefix(want.size());
    return true;
}

// A Kubernetes object name or namespace: DNS-1123 subdomain characters only.
bool name(std::string_view s) {
    if (s.empty() || s.size() > 253) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return false;
    return s != "." && s != "..";
}

}  // namespace

std::string encodeRelayRequest(const RelayRequest& r) {
    const bool accept = r.wantAck && !r.accept.empty();
    std::string out(accept ? kMagicAccept : r.wantAck ? kMagicAck : kMagic, 4);
    putStr(out, r.server);
    putStr(out, r.method);
    putStr(out, r.path);
    putStr(out, r.contentType);
    putStr(out, r.body);
    putU32(out, r.timeoutMs);
    if (accept) putStr(out, r.accept);
    return out;
}

std::optional<RelayRequest> decodeRelayRequest(std::string_view frame) {
    Reader rd{frame};
    RelayRequest r;
    const auto [wantAck, accept] = rd.requestMagic();
    r.wantAck = wantAck;
    r.server = rd.str();
    r.method = rd.str();
    r.path = rd.str();
    r.contentType = rd.str();
    r.body = rd.str();
    r.timeoutMs = rd.u32();
    if (accept) r.accept = rd.str();
    if (!rd.ok || !rd.in.empty()) return std::nullopt;
    return r;
}

std::string encodeRelayResponse(const RelayResponse& r) {
    std::string out(kMagic, 4);
    putU32(out, static_cast<uint32_t>(r.kind));
    putU32(out, r.status);
    putU32(out, static_cast<uint32_t>(r.retryAfterSeconds));
    putStr(out, r.body);
    return out;
}

std::optional<RelayResponse> decodeRelayResponse(std::string_view frame) {
    Reader rd{frame};
    RelayResponse r;
    rd.magic();
    uint32_t kind = rd.u32();
    r.status = rd.u32();
    r.retryAfterSeconds = static_cast<int32_t>(rd.u32());
    r.body = rd.str();
    if (!rd.ok || !rd.in.empty() || kind > 3) return std::nullopt;
    r.kind = static_cast<RelayResponse::Kind>(kind);
    return r;
}

// The plugin's reads for an IPAMClaim (engine/owned_add.h): GET of a pod and of an IPAMClaim,
// PUT of the claim's status.
static bool claimRequest(std::string_view method, std::string_view path) {
    std::string_view kind;
    if (segment(path, "/api/v1/namespaces/"))
        kind = "pods";
    else if (segment(path, "/apis/k8s.cni.cncf.io/v1alpha1/namespaces/"))
        kind = "ipamclaims";
    else
        return false;
    auto slash = path.find('/');
    if (slash == std::string_view::npos || !name(path.substr(0, slash))) return false;
    path.remove_prefix(slash + 1);
    if (!segment(path, kind) || !segment(path, "/")) return false;
    const bool status =
        kind == "ipamclaims" && path.size() > 7 && path.substr(path.size() - 7) == "/status";
    if (status) path.remove_suffix(7);
    if (!name(path)) return false;
    return status ? method == "PUT" : method == "GET";
}

bool relayAllowed(std::string_view method, std::string_view path) {
    if (claimRequest(method, path)) return true;
    if (!segment(path, "/apis/whereabouts.cni.cncf.io/v1alpha1/namespaces/")) return false;
    auto slash = path.find('/');
    if (slash == std::string_view::npos || !name(path.substr(0, slash))) return false;
    path.remove_prefix(slash + 1);
    std::string_view resource = path.substr(0, path.find('/'));
    std::string_view rest = path.substr(resource.size());
    std::string_view object;
    if (!rest.empty()) {
        object = rest.substr(1);
        if (rest[0] != '/' || !name(object)) return false;
    }
    const bool collection = object.empty();
    if (resource == "ippools")
        return collection ? method == "POST" : (method == "GET" || method == "PUT");
    if (resource == "overlappingrangeipreservations")
        return collection ? method == "POST" : (method == "GET" || method == "DELETE");
    if (resource == "nodeslicepools") return !collection && method == "GET";
    return false;
}

bool relayLocal(std::string_view path) {
    return path.substr(0, kRelayLocalPrefix.size()) == kRelayLocalPrefix;
}

std::string relayNodeSlicePath(std::string_view ns, std::string_view name, std::string_view node) {
    std::string out(kRelayLocalPrefix);
    out.append("nodeslices/").append(ns).append("/").append(name).append("/").append(node);
    return out;
}

std::optional<RelayNodeSliceQuery> parseRelayNodeSlicePath(std::string_view path) {
    if (!segment(path, kRelayLocalPrefix) || !segment(path, "nodeslices/")) return std::nullopt;
    RelayNodeSliceQuery q;
    for (std::string* part : {&q.ns, &q.name}) {
        auto slash = path.find('/');
        if (slash == std::string_view::npos || !name(path.substr(0, slash))) return std::nullopt;
        *part = std::string(path.substr(0, slash));
        path.remove_prefix(slash + 1);
    }
    if (!name(path)) return std::nullopt;
    q.node = std::string(path);
    return q;
}

std::string relayClaimPath(std::string_view ns, std::string_view name) {
    std::string out(kRelayLocalPrefix);
    out.append("ipamclaims/").append(ns).append("/").append(name);
    return out;
}

std::optional<RelayClaimQuery> parseRelayClaimPath(std::string_view path) {
    if (!segment(path, kRelayLocalPrefix) || !segment(path, "ipamclaims/")) return std::nullopt;
    auto slash = path.find('/');
    if (slash == std::string_view::npos || !name(path.substr(0, slash)) ||
        !name(path.substr(slash + 1)))
        return std::nullopt;
    return RelayClaimQuery{std::string(path.substr(0, slash)), std::string(path.substr(slash + 1))};
}

namespace {

constexpr size_t kMaxOutcomeNetwork = 63;

bool outcomeWord(std::string_view w) {
    if (w.empty() || w.size() > 16) return false;
    for (char c : w)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
}

std::optional<uint64_t> decimal(std::string_view w) {
    if (w.empty() || w.size() > 19) return std::nullopt;
    uint64_t v = 0;
    for (char c : w) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v;
}

// The next '/'-terminated segment of `path`, removed from it.
std::optional<std::string_view> take(std::string_view& path) {
    auto slash = path.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    auto w = path.substr(0, slash);
    path.remove_prefix(slash + 1);
    return w;
}

}  // namespace

std::string relayOutcomePath(const RelayOutcome& o) {
    std::string net;
    for (char c : o.network.substr(0, kMaxOutcomeNetwork))
        net += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'
                   ? c
                   : '_';
    if (net.empty()) net = "_";
    std::string out(kRelayLocalPrefix);
    out.append("outcome/").append(o.command).append("/").append(o.outcome).append("/");
    return out.append(std::to_string(o.micros)).append("/").append(net);
}

std::optional<RelayOutcome> parseRelayOutcomePath(std::string_view path) {
    if (!segment(path, kRelayLocalPrefix) || !segment(path, "outcome/")) return std::nullopt;
    RelayOutcome o;
    auto cmd = take(path), outcome = take(path), micros = take(path);
    if (!cmd || !outcome || !micros || !outcomeWord(*cmd) || !outcomeWord(*outcome))
        return std::nullopt;
    auto us = decimal(*micros);
    if (!us || path.empty() || path.size() > kMaxOutcomeNetwork) return std::nullopt;
    for (char c : path)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
            return std::nullopt;
    o.command = std::string(*cmd);
    o.outcome = std::string(*outcome);
    o.micros = *us;
    o.network = std::string(path);
    return o;
}

core::Result<void, TransportError> writeFrame(int fd, std::string_view payload,
                                              Clock::time_point deadline) {
    std::string buf;
    putU32(buf, static_cast<uint32_t>(payload.size()));
    buf.append(payload);
    std::string_view left = buf;
    while (!left.empty()) {
        if (auto w = waitFor(fd, POLLOUT, deadline, "sending"); !w) return w.error();
        ssize_t n = ::send(fd, left.data(), left.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return failed(Kind::Connect, std::string("node relay: send: ") + std::strerror(errno));
        }
        left.remove_prefix(static_cast<size_t>(n));
    }
    return {};
}

core::Result<std::string, TransportError> readFrame(int fd, size_t maxBytes,
                                                    Clock::time_point deadline) {
    auto readAll = [&](char* into, size_t want) -> core::Result<void, TransportError> {
        size_t got = 0;
        while (got < want) {
            if (auto w = waitFor(fd, POLLIN, deadline, "receiving"); !w) return w.error();
            ssize_t n = ::recv(fd, into + got, want - got, MSG_DONTWAIT);
            if (n == 0) return failed(Kind::Connect, "node relay: connection closed");
            if (n < 0) {
                if (errno == EINTR || errno == EAGAIN) continue;
                return failed(Kind::Connect,
                              std::string("node relay: recv: ") + std::strerror(errno));
            }
            got += static_cast<size_t>(n);
        }
        return {};
    };
    char len[4];
    if (auto r = readAll(len, 4); !r) return r.error();
    Reader rd{std::string_view(len, 4)};
    uint32_t n = rd.u32();
    if (n > maxBytes)
        return failed(Kind::Protocol,
                      "node relay: frame of " + std::to_string(n) + " bytes is over the limit");
    std::string out(n, '\0');
    if (auto r = readAll(out.data(), n); !r) return r.error();
    return out;
}

std::optional<RelayClient> RelayClient::connect(const std::string& path) {
    sockaddr_un addr{};
    if (path.empty() || path.size() >= sizeof addr.sun_path) return std::nullopt;
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    // Non-blocking: a relay that stopped accepting fills its backlog, and then a blocking
    // connect would wait for it without limit (EAGAIN here: go direct).
    sys::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return std::nullopt;
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        return std::nullopt;
    return RelayClient(std::move(fd));
}

core::Result<RelayResponse, TransportError> RelayClient::send(
    const RelayRequest& r, std::chrono::milliseconds timeout, bool& sent,
    std::chrono::milliseconds ackTimeout) {
    sent = false;
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    const auto ackDeadline = std::min(deadline, start + ackTimeout);
    RelayRequest withAck = r;
    withAck.wantAck = true;
    // A relay that does not even take the frame within the acknowledgement wait is hung.
    if (auto w = writeFrame(fd_.get(), encodeRelayRequest(withAck), ackDeadline); !w)
        return w.error();
    // The first frame is the acknowledgement (or, from a relay that predates them, the answer).
    auto first = readFrame(fd_.get(), kMaxRelayFrame, ackDeadline);
    if (!first) {
        // Nothing acknowledged: the relay never started on it (hung, or closed on us).
        return failed(first.error().kind, "node relay: no acknowledgement within " +
                                              std::to_string(ackTimeout.count()) +
                                              " ms: " + first.error().message);
    }
    sent = true;
    auto resp = decodeRelayResponse(*first);
    if (!resp) return failed(Kind::Protocol, "node relay: unreadable answer");
    if (resp->kind != RelayResponse::Kind::Accepted) return *resp;
    auto frame = readFrame(fd_.get(), kMaxRelayFrame, deadline);
    if (!frame) return frame.error();
    resp = decodeRelayResponse(*frame);
    if (!resp || resp->kind == RelayResponse::Kind::Accepted)
        return failed(Kind::Protocol, "node relay: unreadable answer");
    return *resp;
}

}  // namespace allot::k8s
