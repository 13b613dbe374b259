#pragma once
// The node relay's serving end (k8s/relay.h): a Unix socket, mode 0600, where the plugin's
// pool requests arrive and are sent on to the API server through a few long-lived clients.
// Requests for another API server or outside the pool resources are refused, not sent.

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "k8s/client.h"
#include "k8s/relay.h"
#include "sys/fd.h"

namespace allot::gc {

// Whether the relay can reach the API server. A transport failure (no answer at all) marks
// it down; any answer marks it up. While down the relay refuses pool requests, so the plugin
// goes direct at once instead of waiting on a relay that cannot help, and a probe (GET
// /version, every kProbeInterval) finds out when the server is back.
struct RelayHealth {
    std::atomic<bool> down{false};
    void failed(const std::string& why);
    void answered() { down.store(false); }
    std::string why() const;

  private:
    mutable std::mutex mu_;
    std::string why_;
};

inline constexpr const char* kRelayProbePath = "/version";

// Answers a local question (k8s::relayLocal) from what allot-gc keeps, or nullopt when the
// question is not this handler's (the next one is asked).
using RelayLocal = std::function<std::optional<k8s::RelayResponse>(const k8s::RelayRequest&)>;

struct RelayServerOptions {
    std::string socketPath;
    std::string server;  // the API server this process talks to
    // Plugin processes served at once (each only waits while acknowledged): a node's burst of
    // ADDs queues here instead of being turned away. More wait in the listen backlog.
    size_t maxConnections = 1024;
    std::chrono::milliseconds maxTimeout{std::chrono::seconds(30)};
    std::chrono::milliseconds probeInterval{std::chrono::seconds(1)};
    std::shared_ptr<RelayHealth> health;  // null: always taken as up
    // Handlers of local questions, asked in order; one that none answers is Refused.
    std::vector<RelayLocal> local;
    // Answers an API request allot-gc already knows (a pod of this node: claim_pod_index.h)
    // without the API server; nullopt: forwarded.
    std::function<std::optional<k8s::RelayResponse>(const k8s::RelayRequest&)> known;
    // A pool request not carried, by why: "other_server", "not_a_pool_request",
    // "api_unreachable" (the metric allot_relay_refused_total).
    std::function<void(const char* reason)> onRefused;
};

// Turns at the relay's API clients: first come, first served, and a request waits only until
// its own deadline. A condition variable alone wakes waiters in no order, so under a burst
// some waited without limit, past the time their plugins still listened (they failed with
// "timed out receiving" while the relay went on to send requests nobody would read).
class ClientTurns {
  public:
    using Clock = std::chrono::steady_clock;
    explicit ClientTurns(size_t slots) : free_(slots) {}
    // True when a slot was taken before `deadline`, the longest waiter first; false: none was.
    bool take(Clock::time_point deadline);
    void give();
    size_t waiting() const;

  private:
    // Each waiter sleeps on its own condition variable and only the front one is woken: a burst
    // of a hundred waiters costs one wake-up per turn, not a hundred.
    struct Waiter {
        std::condition_variable cv;
    };
    void wakeFront();  // under mu_

    mutable std::mutex mu_;
    size_t free_;
    std::deque<Waiter*> queue_;  // oldest first
};

// Of a request's time, the share it may wait for a client: the rest is for the API server's
// answer. A request that gets no client within it is answered 429 (Too Many Requests, Retry-
// After 1) without being sent, so its plugin knows it was not applied and tries again.
inline constexpr int kRelayQueueSharePercent = 75;

// Sends one request on; the result as the API server gave it (the status left uninterpreted).
using RelayForward = std::function<k8s::RelayResponse(const k8s::RelayRequest&)>;

// Forwards through up to `clients` API clients made by `make` as needed (each keeps its own
// connection open); a request waits while all are busy (ClientTurns), and is sent with the time
// it has left. With `health`, each answer and
// transport failure is recorded there, and a request that got its turn while the server is
// down is refused (never sent) rather than sent into the outage.
RelayForward clientForward(std::function<std::optional<k8s::Client>()> make, size_t clients,
                           const std::shared_ptr<RelayHealth>& health = nullptr);

// What the relay answers to one request: refused, a local handler's answer, or whatever
// `forward` gives.
k8s::RelayResponse relayAnswer(const RelayServerOptions& opts, const k8s::RelayRequest& req,
                               const RelayForward& forward);

class RelayServer {
  public:
    RelayServer(RelayServerOptions opts, RelayForward forward);
    ~RelayServer();
    RelayServer(const RelayServer&) = delete;
    RelayServer& operator=(const RelayServer&) = delete;

    // Binds the socket (replacing a stale one, or a predecessor's: a new pod takes the path
    // over; its directory is made 0700). InvalidConfig naming the path when it cannot.
    core::Result<void> bind();
    // Serves until stop().
    void serve();
    // Stops serving and removes the socket path only while it is still the file bind() made:
    // by then a successor (the next pod, on the same hostPath) may have bound its own there.
    void stop();
    uint64_t served() const { return served_.load(); }

  private:
    void handle(int fd);
    void probe();
    void serveLoop();

    RelayServerOptions opts_;
    RelayForward forward_;
    sys::Fd listenFd_;
    // The socket file bind() made (st_dev, st_ino): what stop() may unlink.
    std::optional<std::pair<dev_t, ino_t>> socketFile_;
    std::atomic<bool> stopping_{false};
    std::mutex stopMu_;  // with stopCv_: wakes the prober at stop()
    std::condition_variable stopCv_;
    std::atomic<size_t> active_{0};
    // Open client connections: serve() shuts them down on stop and waits until every handler
    // thread has finished, so none outlives the server.
    std::mutex connsMu_;
    std::condition_variable connsDone_;
    std::vector<int> conns_;
    std::atomic<uint64_t> served_{0};
};

}  // namespace allot::gc
