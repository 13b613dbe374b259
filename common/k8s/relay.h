#pragma once
// The node relay. allot-gc, long-running on every node, forwards the plugin's pool requests to
// the API server over its own open connection, so a plugin process needs neither libcurl nor
// a TLS handshake of its own. Both ends are allot's: frames on a Unix socket that only root
// can open, a 4-byte length and then the fields.
//
// The relay answers for the API server the plugin names, and only that one: a plugin
// configured for another server is refused, and so is any request outside the pool resources
// (relayAllowed). A refused request was not sent; the plugin then talks to the server itself.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "k8s/transport_error.h"
#include "sys/fd.h"

namespace allot::k8s {

inline constexpr const char* kDefaultRelaySocket = "/run/allot/api.sock";
inline constexpr size_t kMaxRelayFrame = 8u << 20;

// A plugin that asks for an acknowledgement (wantAck, sent by current plugins) gets an
// Accepted frame as soon as the relay has read the request and will forward it, then the
// answer. That tells a busy relay (acknowledged, answer pending) from a hung one (nothing),
// so only the hung one costs the plugin its short acknowledgement wait before it goes direct.
struct RelayRequest {
    std::string server;  // the API server URL the caller would use
    std::string method;
    std::string path;  // from /apis/..., no query
    std::string contentType;
    std::string body;
    uint32_t timeoutMs = 0;
    bool wantAck = false;
    // The Accept to send ("" = application/json). A request with one is framed with another
    // magic, which a relay that predates it refuses as unreadable: the plugin then goes direct.
    std::string accept = {};
};

struct RelayResponse {
    enum class Kind : uint8_t {
        Answered = 0,  // the API server answered: status, retryAfter, body
        Refused = 1,   // not relayed (another server, a request outside the pool resources)
        Failed = 2,    // relayed, but no answer came (body says why): it may have been applied
        Accepted = 3,  // read and being forwarded; the answer follows (wantAck requests only)
    };
    Kind kind = Kind::Answered;
    uint32_t status = 0;
    int32_t retryAfterSeconds = -1;
    std::string body;
};

std::string encodeRelayRequest(const RelayRequest& r);
std::optional<RelayRequest> decodeRelayRequest(std::string_view frame);
std::string encodeRelayResponse(const RelayResponse& r);
std::optional<RelayResponse> decodeRelayResponse(std::string_view frame);

// Questions the relay answers itself from what allot-gc keeps, never sent to the API server:
// GET of a path under kRelayLocalPrefix. Answered (status 200 and the answer, 404 when it has
// none) or Refused (it does not know: the caller asks the API server).
inline constexpr std::string_view kRelayLocalPrefix = "/allot-relay/v1/";
bool relayLocal(std::string_view path);
// The slice NodeSlicePool ns/name gives `node` (body: the CIDR), from allot-gc's watch of
// the node's NodeSlicePools: a copy that may lag the API server (see engine::TxTarget::unseal
// for why a lagging copy is still safe).
std::string relayNodeSlicePath(std::string_view ns, std::string_view name, std::string_view node);
struct RelayNodeSliceQuery {
    std::string ns, name, node;
};
std::optional<RelayNodeSliceQuery> parseRelayNodeSlicePath(std::string_view path);
// The IPAMClaim ns/name (body: the object, without managedFields) from allot-gc's watch of
// IPAMClaims: a copy that may lag the API server by a watch event (engine/owned_add.h says what
// the plugin does about that). Refused when the copy does not have it: ask the API server.
std::string relayClaimPath(std::string_view ns, std::string_view name);
struct RelayClaimQuery {
    std::string ns, name;
};
std::optional<RelayClaimQuery> parseRelayClaimPath(std::string_view path);

// How one CNI call ended, told by the plugin after its ADD or DEL (answered 200, nothing kept
// but allot-gc's metrics): the command ("ADD", "DEL"), the outcome ("ok" or "cni_<code>"),
// the call's duration in microseconds, and the network's name (characters other than
// letters, digits, '.', '_' and '-' become '_'; at most 63).
struct RelayOutcome {
    std::string command, outcome, network;
    uint64_t micros = 0;
};
std::string relayOutcomePath(const RelayOutcome& o);
std::optional<RelayOutcome> parseRelayOutcomePath(std::string_view path);

// Requests the plugin makes: GET/PUT of an IPPool, POST of IPPools and of reservations,
// GET/DELETE of a reservation, GET of a NodeSlicePool, in any namespace; for an IPAMClaim
// (allowPersistentIPs), GET of a pod and of an IPAMClaim and PUT of the claim's status.
bool relayAllowed(std::string_view method, std::string_view path);

// One frame each way, bounded by `deadline`. Errors: Timeout, Connect for a broken or closed
// connection, Protocol for a frame over maxBytes.
core::Result<void, TransportError> writeFrame(int fd, std::string_view payload,
                                              std::chrono::steady_clock::time_point deadline);
core::Result<std::string, TransportError> readFrame(int fd, size_t maxBytes,
                                                    std::chrono::steady_clock::time_point deadline);

// How long the plugin waits for the relay's acknowledgement before it takes the relay for
// hung and goes direct. An accepting relay answers in well under a millisecond.
inline constexpr std::chrono::milliseconds kRelayAckTimeout{1500};

// The plugin's end: one connection, one request at a time. Move-only.
class RelayClient {
  public:
    // nullopt when nothing listens at `path` (no relay on this node), or when its backlog is
    // full (the connect would block): the caller goes direct.
    static std::optional<RelayClient> connect(const std::string& path);
    RelayClient(RelayClient&& o) noexcept = default;
    RelayClient& operator=(RelayClient&& o) noexcept = default;

    // Sends with wantAck. Errors: as readFrame's, and Protocol for an answer that does not
    // decode. `sent` is false when the relay did not take the request (nothing acknowledged
    // within `ackTimeout`: the caller goes direct), true when it did and its answer was lost
    // (it may have been applied). A Failed answer is an answer, not an error.
    core::Result<RelayResponse, TransportError> send(
        const RelayRequest& r, std::chrono::milliseconds timeout, bool& sent,
        std::chrono::milliseconds ackTimeout = kRelayAckTimeout);

  private:
    explicit RelayClient(sys::Fd fd) : fd_(std::move(fd)) {}
    sys::Fd fd_;
};

}  // namespace allot::k8s
