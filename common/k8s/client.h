#pragma once
// A Kubernetes REST client: typed errors, a per-request timeout under an overall deadline,
// paginated list and watch. Paths are API paths ("/api/v1/namespaces/x/pods/y"); see
// resources.h to build them. Not thread-safe: one request at a time per Client.
//
// Every call maps the HTTP status as mapStatus() (status.h) documents, in short:
//   NotFound (404), AlreadyExists (409 on create), Conflict (409 otherwise: stale
//   resourceVersion or failed precondition), Expired (410), Invalid (422), Unauthorized (401),
//   Forbidden (403), Transient (429, 5xx, deadline exceeded), TooLarge (etcd's refusal);
// and a transport failure (no HTTP answer) as toError() below documents.
// A request is never retried here: retrying (and backoff) is the caller's policy.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "json/json.h"
#include "k8s/kubeconfig.h"
#include "k8s/relay.h"
#include "k8s/transport.h"
#include "k8s/watch.h"

namespace allot::k8s {

enum class PatchType { Merge, Json, Strategic, Apply };

// The one conversion of a transport failure (either transport) to allot's error, the message
// kept: Transient for Connect, Timeout, Tls, Protocol and Relayed (the request may be retried;
// a Relayed one may have been applied); InvalidConfig for LocalConfig (retrying cannot help);
// Internal for Internal.
core::Error toError(const TransportError& e);

struct ListOptions {
    std::string labelSelector;
    std::string fieldSelector;
    std::string resourceVersion;  // "" = most recent (quorum read); "0" = any (cache)
    int64_t limit = 0;            // 0 = no limit (list) / 500 per page (listEach)
    std::string continueToken;
};

struct WatchOptions {
    std::string fieldSelector;
    std::string labelSelector;
    std::string resourceVersion;  // usually the list's; "" = start from now
    bool allowWatchBookmarks = true;
    int64_t timeoutSeconds = 0;  // server-side end of the watch; 0 = server default
};

struct Preconditions {
    std::string uid;
    std::string resourceVersion;
};

// The Accept of a write whose caller needs only the stored object's metadata (its new
// resourceVersion): PartialObjectMetadata, else the object itself from a server without it.
inline constexpr std::string_view kAcceptMetadata =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json";

class Client {
  public:
    struct Options {
        std::chrono::milliseconds requestTimeout{std::chrono::seconds(10)};
        std::chrono::steady_clock::time_point deadline =
            std::chrono::steady_clock::time_point::max();  // overall; max() = none
        std::string userAgent = "allot";
        // allot-gc's node relay (relay.h): when something listens there, requests that may go
        // through it do, and the rest go direct. Empty: always direct.
        std::string relaySocket;
        // Called for each 429 (Too Many Requests) the API server answers this client, the
        // relay's forwarding included: API priority and fairness is holding it back.
        std::function<void()> onThrottled;
    };

    // Reads cfg.tokenFile (if any) now. cfg.exec's plugin runs before the first request instead
    // (exec_credential.h), and again once its credential has expired or the server answered
    // 401; a plugin that fails fails that request: InvalidConfig with the plugin's message
    // (Transient when it ran past the request's deadline, or 5 minutes). Errors: InvalidConfig
    // (unreadable token file, TLS material curl rejects), Internal.
    static core::Result<Client> fromConfig(ClusterConfig cfg, Options options);
    static core::Result<Client> fromConfig(ClusterConfig cfg) {
        return fromConfig(std::move(cfg), Options{});
    }

    // The decoded object. NotFound when absent. `taps` take parts of it as they are parsed
    // (json::Tap): what they take is not in the tree returned.
    core::Result<json::Value> get(const std::string& path, const std::vector<json::Tap>& taps = {});
    // POST to a collection path; the created object. AlreadyExists when the name is taken.
    core::Result<json::Value> create(const std::string& path, const json::Value& body);
    // PUT; the stored object. Conflict when body's metadata.resourceVersion is stale;
    // NotFound when absent.
    core::Result<json::Value> replace(const std::string& path, const json::Value& body);
    // As replace, with the body already encoded, answered with the stored object's metadata
    // only (kAcceptMetadata): the server does not encode again, nor this client parse, an
    // object it has just sent. A server that cannot answer so sends the whole object, and
    // `taps` (as get's) take parts of it as it is parsed.
    core::Result<json::Value> replaceEncoded(const std::string& path, const std::string& body,
                                             const std::vector<json::Tap>& taps);
    // PATCH; the patched object. NotFound when absent; Conflict when a resourceVersion inside
    // the patch is stale or (Apply without force) fields are owned by another manager.
    core::Result<json::Value> patch(const std::string& path, const json::Value& body,
                                    PatchType type, const std::string& fieldManager = "",
                                    bool force = false);
    // DELETE; the server's answer (the object or a Status). NotFound when absent; Conflict when
    // a precondition does not hold.
    core::Result<json::Value> remove(const std::string& path,
                                     const std::optional<Preconditions>& pre = std::nullopt);

    // One page: the List object (items, metadata.resourceVersion, metadata.continue).
    // Expired when resourceVersion or the continue token is too old.
    core::Result<json::Value> list(const std::string& path, const ListOptions& opts = {});
    // Every item, one item in memory at a time (handed over as its page is parsed); onItem may
    // move the item away and returns false to stop early. `itemTaps` (paths from an item) take
    // parts of each item as they are parsed, before onItem sees the rest (json::Tap): a
    // large item need not be held whole either. Returns the list's resourceVersion (to start
    // a watch from).
    core::Result<std::string> listEach(const std::string& path, ListOptions opts,
                                       const std::function<bool(json::Value& item)>& onItem,
                                       const std::vector<json::Tap>& itemTaps = {});

    // Streams events to onEvent until the server ends the watch, onEvent returns false, or an
    // error. Returns the last resourceVersion seen (from objects and bookmarks; opts'
    // resourceVersion if none). ERROR events are not delivered: one with code 410, or HTTP 410,
    // is Expired (relist); other ERROR events map as their code does. Decode for a garbled or
    // oversized (> 4 MiB) event; Transient when the connection drops mid-stream (callers track
    // the resourceVersion from the events they got to resume).
    core::Result<std::string> watch(const std::string& path, const WatchOptions& opts,
                                    const std::function<bool(const WatchEvent&)>& onEvent);

    const ClusterConfig& config() const { return cfg_; }
    // A second client like this one (same server, credentials and options), with connections
    // of its own: for a request made alongside this client's.
    core::Result<Client> sibling() const { return fromConfig(cfg_, options_); }
    // Whether requests go through the node relay (it answered this client already).
    bool relayInUse() const { return relayState_ == RelayState::Using; }
    void setDeadline(std::chrono::steady_clock::time_point deadline) {
        options_.deadline = deadline;
    }
    // Retry-After (seconds) of the last response, when it had one (429/503 usually).
    std::optional<int> lastRetryAfter() const { return lastRetryAfter_; }
    uint64_t requestCount() const { return requests_; }
    // Requests the node relay carried.
    uint64_t relayedCount() const { return relayed_; }

    // A question the node relay answers itself (relay.h, kRelayLocalPrefix): the body of its
    // 200 answer. nullopt when it has no answer, refuses, or no relay is there: the caller
    // then asks the API server. Never sent to the API server; a refusal here does not stop
    // this client's later requests from using the relay.
    std::optional<std::string> askRelay(const std::string& path);

    // One request with the HTTP status left to the caller (the node relay's forwarding).
    // Errors only for transport failures, as HttpClient::send.
    core::Result<HttpResponse, TransportError> raw(std::string_view method, const std::string& path,
                                                   const std::string& body,
                                                   std::string_view contentType,
                                                   std::chrono::milliseconds timeout,
                                                   std::string_view accept = {});

  private:
    Client(ClusterConfig cfg, Options options, TlsConfig tls);
    // The direct connection, made on first use: a process served by the relay never loads libcurl.
    core::Result<HttpClient*, TransportError> direct();
    // Through the relay when one is there; nullopt: go direct.
    bool relayUsable();
    std::optional<core::Result<HttpResponse, TransportError>> viaRelay(
        std::string_view method, const std::string& path, const std::string& body,
        std::string_view contentType, std::chrono::milliseconds timeout, std::string_view accept);

    // The response body of a request whose status is a success.
    core::Result<std::string> request(const char* verb, std::string_view method,
                                      const std::string& path, const std::string& body,
                                      std::string_view contentType, std::string_view accept = {});
    core::Result<json::Value> call(const char* verb, std::string_view method,
                                   const std::string& path, const std::string& body,
                                   std::string_view contentType,
                                   const std::vector<json::Tap>& taps = {},
                                   std::string_view accept = {});
    core::Result<json::Value> listPage(const std::string& path, const ListOptions& opts,
                                       const std::vector<json::Tap>& taps);
    core::Result<std::chrono::milliseconds> timeoutFor(const char* verb, const std::string& path,
                                                       std::chrono::milliseconds want) const;
    // The token (file or exec plugin) and the exec plugin's certificate, fresh for the next
    // request: the one place credentials change.
    core::Result<void, TransportError> refreshCredentials();
    core::Result<void, TransportError> refreshExec();

    ClusterConfig cfg_;
    Options options_;
    TlsConfig tls_;
    std::optional<HttpClient> http_;
    enum class RelayState { Untried, Using, Off } relayState_ = RelayState::Untried;
    std::optional<RelayClient> relay_;
    std::optional<int> lastRetryAfter_;
    uint64_t requests_ = 0;
    uint64_t relayed_ = 0;
    std::chrono::steady_clock::time_point tokenReadAt_;
    // After a 401: re-read the token file, or run the exec plugin again, before the next request.
    bool tokenStale_ = false;
    std::optional<ExecCredential> execCred_;  // what cfg_.exec's plugin gave, in use
};

// A Client from a kubeconfig file, or from the in-cluster ServiceAccount when the path is
// empty. Errors: as loadKubeconfig / inClusterConfig / Client::fromConfig.
core::Result<Client> makeClient(const std::string& kubeconfigPath, Client::Options options);
inline core::Result<Client> makeClient(const std::string& kubeconfigPath) {
    return makeClient(kubeconfigPath, Client::Options{});
}

}  // namespace allot::k8s
