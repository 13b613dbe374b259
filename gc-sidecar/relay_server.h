#pragma once
// The node relay's serving end (k8s/relay.h): a Unix socket, mode 0600, where the plugin's
// pool requests arrive and are sent on to the API server through a few long-lived clients.
// Requests for another API server or outside the pool resources are refused, not sent.

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "k8s/client.h"
#include "k8s/relay.h"

namespace allot::gc {

struct RelayServerOptions {
    std::string socketPath;
    std::string server;         // the API server this process talks to
    size_t maxConnections = 128;  // plugin processes served at once; more wait in the backlog
    std::chrono::milliseconds maxTimeout{std::chrono::seconds(30)};
};

// Sends one request on; the result as the API server gave it (the status left uninterpreted).
using RelayForward = std::function<k8s::RelayResponse(const k8s::RelayRequest&)>;

// Forwards through up to `clients` API clients made by `make` as needed (each keeps its own
// connection open); a request waits while all are busy.
RelayForward clientForward(std::function<std::optional<k8s::Client>()> make, size_t clients);

// What the relay answers to one request: refused, or whatever `forward` gives.
k8s::RelayResponse relayAnswer(const RelayServerOptions& opts, const k8s::RelayRequest& req,
                               const RelayForward& forward);

class RelayServer {
public:
    RelayServer(RelayServerOptions opts, RelayForward forward);
    ~RelayServer();
    RelayServer(const RelayServer&) = delete;
    RelayServer& operator=(const RelayServer&) = delete;

    // Binds the socket (replacing a stale one; its directory is made 0700). InvalidConfig
    // naming the path when it cannot.
    core::Result<void> bind();
    // Serves until stop().
    void serve();
    void stop();
    uint64_t served() const { return served_.load(); }

private:
    void handle(int fd);

    RelayServerOptions opts_;
    RelayForward forward_;
    int listenFd_ = -1;
    std::atomic<bool> stopping_{false};
    std::atomic<size_t> active_{0};
    std::atomic<uint64_t> served_{0};
};

}  // namespace allot::gc
