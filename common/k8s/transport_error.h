#pragma once
// Why a request to the API server got no HTTP answer, from either transport: the direct
// connection (HttpClient) or the node relay (RelayClient). An HTTP status is never one of
// these: any status, 4xx and 5xx included, is an answer (HttpResponse) for the caller to map.
// The k8s client turns a TransportError into a core::Error in one place (toError, client.h).

#include <string>

namespace allot::k8s {

struct TransportError {
    enum class Kind {
        Connect,      // no connection, or it broke: refused, unresolvable, reset, closed
        Timeout,      // the exchange outlasted its timeout, or no time was left to start it
        Tls,          // the TLS handshake failed on the way (our own material: LocalConfig)
        Protocol,     // the peer's answer could not be read: a garbled frame or HTTP response
        LocalConfig,  // this side cannot work as configured: TLS material that cannot be loaded,
                      // a malformed URL, a server certificate the configured CA does not verify
        Relayed,      // the node relay took the request and got no answer from the API server:
                      // it may have been applied (the message says why)
        Internal,     // libcurl unusable or its set-up failed; a response past allot's limit
    };
    Kind kind;
    std::string message;  // names the method and URL, or the node relay; never credentials
};

}  // namespace allot::k8s
