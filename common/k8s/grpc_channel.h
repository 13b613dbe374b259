#pragma once
// Unary gRPC calls to a local server on a unix socket (the node's container runtime: CRI), over
// HTTP/2 cleartext with prior knowledge. Implemented in transport.cpp, the only user of libcurl.
//
// As for HttpClient, a transport failure and an answer are two different things: unary()
// returns a TransportError only when no gRPC status came back (no socket, refused, timed out,
// an answer that is not gRPC); any gRPC status, NOT_FOUND and UNIMPLEMENTED included, is a
// GrpcReply for the caller to map.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "k8s/transport_error.h"

namespace allot::k8s {

// The gRPC status codes callers name (grpc/status.h: the numbers are the wire's).
namespace grpc_code {
inline constexpr int kOk = 0;
inline constexpr int kNotFound = 5;
inline constexpr int kUnimplemented = 12;
}  // namespace grpc_code

// "OK", "NOT_FOUND", ... for codes 0-16; "code N" for any other.
std::string grpcCodeName(int code);

struct GrpcReply {
    int status = 0;       // the gRPC status (grpc-status): 0 OK, 5 NOT_FOUND, 12 UNIMPLEMENTED...
    std::string message;  // grpc-message, percent-decoded, at most 1 KiB; often empty
    std::string payload;  // status 0: the response message, unframed (protobuf); else empty
};

// Move-only owner of one CURL handle, reused across calls; each call has a connection of its own
// (libcurl 7.88 cannot reuse a prior-knowledge HTTP/2 one: transport.cpp), so a server that
// restarted meanwhile is simply connected to again. Not thread-safe: one call at a time.
class GrpcChannel {
  public:
    // `socketPath`: the unix socket's path (nothing is connected until the first call).
    // Errors: LocalConfig for an empty path or one too long for a unix socket, and when the
    // loaded libcurl lacks HTTP/2 or unix sockets (the static plugin's); Internal when libcurl
    // cannot be loaded or initialised.
    static core::Result<GrpcChannel, TransportError> create(std::string socketPath);

    GrpcChannel(GrpcChannel&&) noexcept;
    GrpcChannel& operator=(GrpcChannel&&) noexcept;
    GrpcChannel(const GrpcChannel&) = delete;
    GrpcChannel& operator=(const GrpcChannel&) = delete;
    ~GrpcChannel();

    // Calls `method` ("/package.Service/Method") with `message` (a serialized request) and
    // returns the status and, on OK, the first response message. `timeout` covers the whole
    // call, connecting included, and is sent as grpc-timeout; must be > 0.
    // Errors (TransportError::Kind): Connect (no socket, refused, reset), Timeout (no time left
    // included); Protocol for an answer without grpc-status (the HTTP status is named), a
    // compressed or truncated message, or OK without a message; LocalConfig for a malformed
    // method name; Internal for a response over 4 MiB. Each message names the socket and the
    // method.
    core::Result<GrpcReply, TransportError> unary(std::string_view method, std::string_view message,
                                                  std::chrono::milliseconds timeout);

  private:
    struct Impl;
    explicit GrpcChannel(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace allot::k8s
