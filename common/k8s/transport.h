#pragma once
// HTTPS transport to the API server. The only user of libcurl.
//
// A transport failure (could not connect, timed out, TLS handshake failed) and an HTTP
// status are two different things and two different types: send() returns a TransportError
// only for the former; any HTTP status, including 4xx/5xx, is a successful HttpResponse for
// the caller to map (k8s/status.h). Error messages never contain the token, keys or
// certificate data.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "k8s/transport_error.h"

namespace allot::k8s {

struct TlsConfig {
    // Server verification is always on unless insecureSkipVerify (only from a kubeconfig that
    // says so). PEM data wins over the file when both are set. No CA: the system bundle.
    std::string caData, caFile;
    bool insecureSkipVerify = false;
    std::string clientCertData, clientCertFile;
    std::string clientKeyData, clientKeyFile;
};

struct HttpResponse {
    long status = 0;
    std::string body;
    std::optional<int> retryAfterSeconds;  // Retry-After header in seconds, when present
};

// Move-only owner of one CURL handle, reused across requests so the connection (HTTP/2 when
// the server offers it) stays open. Not thread-safe: one request at a time.
class HttpClient {
  public:
    // Errors: Internal when curl cannot be initialised, LocalConfig when it refuses the CA or
    // the client certificate or key.
    static core::Result<HttpClient, TransportError> create(const TlsConfig& tls,
                                                           const std::string& userAgent);

    HttpClient(HttpClient&&) noexcept;
    HttpClient& operator=(HttpClient&&) noexcept;
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;
    ~HttpClient();

    // Sent as "Authorization: Bearer ..." from the next request on; empty: none.
    void setBearerToken(const std::string& token);

    // One request; `body` is sent when non-empty or the method is POST/PUT/PATCH.
    // timeout covers the whole exchange (connect included); must be > 0.
    // Errors (TransportError::Kind): Connect, Timeout (no time left included), Tls for the
    // handshake, Protocol for an unreadable answer; LocalConfig for local TLS material that
    // curl cannot load, a malformed URL or a server certificate the CA does not verify;
    // Internal for a response over 128 MiB. Each message names the method and the URL.
    // `accept`: the Accept header ("" = application/json).
    core::Result<HttpResponse, TransportError> send(std::string_view method, const std::string& url,
                                                    std::string_view body,
                                                    std::string_view contentType,
                                                    std::chrono::milliseconds timeout,
                                                    std::string_view accept = {});

    // A streaming GET (watch). onData receives the body of a 2xx response chunk by chunk, as it
    // arrives; returning false ends the stream early (not an error). For a non-2xx response the
    // body is not passed to onData but collected (first 64 KiB) into *errorBody when given.
    // timeout 0 means no overall limit. Returns the HTTP status; errors as for send().
    core::Result<long, TransportError> stream(
        const std::string& url, std::chrono::milliseconds timeout,
        const std::function<bool(std::string_view chunk)>& onData,
        std::string* errorBody = nullptr);

  private:
    struct Impl;
    explicit HttpClient(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace allot::k8s
