#include "gc-sidecar/relay/relay_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "node_state/files.h"

namespace allot::gc {

using core::Errc;
using core::makeError;
using Clock = std::chrono::steady_clock;

namespace {
// A plugin process keeps its connection for the few requests of one CNI call.
constexpr auto kIdleLimit = std::chrono::seconds(60);
}  // namespace

void RelayHealth::failed(const std::string& why) {
    {
        std::lock_guard l(mu_);
        why_ = why;
    }
    down.store(true);
}

std::string RelayHealth::why() const {
    std::lock_guard l(mu_);
    return why_;
}

void ClientTurns::wakeFront() {
    if (free_ > 0 && !queue_.empty()) queue_.front()->cv.notify_one();
}

bool ClientTurns::take(Clock::time_point deadline) {
    std::unique_lock lk(mu_);
    Waiter me;
    queue_.push_back(&me);
    const bool got =
        me.cv.wait_until(lk, deadline, [&] { return free_ > 0 && queue_.front() == &me; });
    std::erase(queue_, &me);
    if (got) --free_;
    wakeFront();  // a slot may be left for the next in line
    return got;
}

void ClientTurns::give() {
    std::lock_guard lk(mu_);
    ++free_;
    wakeFront();
}

size_t ClientTurns::waiting() const {
    std::lock_guard lk(mu_);
    return queue_.size();
}

namespace {

// The relay's own 429: the request was never sent.
k8s::RelayResponse relayBusy(std::chrono::milliseconds waited) {
    return {k8s::RelayResponse::Kind::Answered, 429, 1,
            R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests",)"
            R"("code":429,"message":"node relay busy: no API client free within )" +
                std::to_string(waited.count()) + R"( ms; not sent"})"};
}

}  // namespace

RelayForward clientForward(std::function<std::optional<k8s::Client>()> make, size_t clients,
                           const std::shared_ptr<RelayHealth>& health) {
    struct Pool {
        explicit Pool(size_t n) : turns(n) {}
        ClientTurns turns;
        std::mutex mu;
        std::vector<std::unique_ptr<k8s::Client>> idle;
    };
    auto pool = std::make_shared<Pool>(clients);
    return [pool, make = std::move(make),
            health](const k8s::RelayRequest& r) -> k8s::RelayResponse {
        using Kind = k8s::RelayResponse::Kind;
        const auto start = Clock::now();
        const auto timeout = std::chrono::milliseconds(r.timeoutMs);
        if (!pool->turns.take(start + timeout * kRelayQueueSharePercent / 100))
            return relayBusy(
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
        std::unique_ptr<k8s::Client> c;
        {
            std::lock_guard lk(pool->mu);
            if (!pool->idle.empty()) {
                c = std::move(pool->idle.back());
                pool->idle.pop_back();
            }
        }
        if (!c) {
            auto made = make();
            if (!made) {
                pool->turns.give();
                return {Kind::Refused, 0, -1, "relay has no API client"};
            }
            c = std::make_unique<k8s::Client>(std::move(*made));
        }
        auto giveBack = [&] {
            {
                std::lock_guard lk(pool->mu);
                pool->idle.push_back(std::move(c));
            }
            pool->turns.give();
        };
        // Queued behind requests that found the server gone: do not send this one after them.
        if (health && health->down.load() && r.path != kRelayProbePath) {
            giveBack();
            return {Kind::Refused, 0, -1, "relay cannot reach the API server: " + health->why()};
        }
        // Sent with the time its plugin still waits, not the whole of it again.
        const auto left = std::max(
            std::chrono::milliseconds(1),
            std::chrono::duration_cast<std::chrono::milliseconds>(start + timeout - Clock::now()));
        auto resp = c->raw(r.method, r.path, r.body, r.contentType, left, r.accept);
        giveBack();
        if (health) {
            if (resp)
                health->answered();
            else
                health->failed(resp.error().message);
        }
        if (!resp) return {Kind::Failed, 0, -1, resp.error().message};
        return {Kind::Answered, static_cast<uint32_t>(resp->status),
                resp->retryAfterSeconds.value_or(-1), std::move(resp->body)};
    };
}

namespace {

k8s::RelayResponse refused(const RelayServerOptions& opts, const char* reason, std::string why) {
    if (opts.onRefused) opts.onRefused(reason);
    return {k8s::RelayResponse::Kind::Refused, 0, -1, std::move(why)};
}

}  // namespace

k8s::RelayResponse relayAnswer(const RelayServerOptions& opts, const k8s::RelayRequest& req,
                               const RelayForward& forward) {
    using Kind = k8s::RelayResponse::Kind;
    if (req.server != opts.server)
        return refused(opts, "other_server",
                       "this relay talks to " + opts.server + ", not " + req.server);
    if (k8s::relayLocal(req.path)) {
        for (const auto& local : opts.local)
            if (auto r = local(req)) return *r;
        return {Kind::Refused, 0, -1, "no answer here for " + req.path};
    }
    if (!k8s::relayAllowed(req.method, req.path))
        return refused(opts, "not_a_pool_request",
                       "not a pool request: " + req.method + " " + req.path);
    // Only the Accepts allot sends: the field becomes a header on allot-gc's connection.
    if (!req.accept.empty() && req.accept != k8s::kAcceptMetadata)
        return refused(opts, "not_a_pool_request", "not an Accept allot sends: " + req.accept);
    if (opts.known)
        if (auto known = opts.known(req)) return std::move(*known);
    if (opts.health && opts.health->down.load())
        return refused(opts, "api_unreachable",
                       "relay cannot reach the API server: " + opts.health->why());
    auto r = forward(req);
    if (r.kind == Kind::Refused && opts.onRefused) opts.onRefused("api_unreachable");
    return r;
}

namespace {

// The directory of the socket `path`.
std::string dirOf(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

// An exclusive flock(2) on the socket's directory, held while the returned descriptor is open
// (empty: not had within a second). It orders a successor's unlink-and-bind with this relay's
// check-then-unlink at stop, so the check still holds when the path is unlinked. Tried
// without blocking, a short poll apart: flock(2) has no timeout, and a SIGALRM in this threaded
// process would interrupt whichever thread takes it.
sys::Fd lockDir(const std::string& dir) {
    sys::Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return fd;
    for (int i = 0; i < 50; ++i) {
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return fd;
        if (errno != EWOULDBLOCK && errno != EINTR) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return sys::Fd();
}

}  // namespace

RelayServer::RelayServer(RelayServerOptions opts, RelayForward forward)
    : opts_(std::move(opts)), forward_(std::move(forward)) {}

RelayServer::~RelayServer() = default;

core::Result<void> RelayServer::bind() {
    sockaddr_un addr{};
    const std::string& path = opts_.socketPath;
    if (path.empty() || path.size() >= sizeof addr.sun_path)
        return makeError(Errc::InvalidConfig,
                         "relay socket path \"" + path + "\" is empty or too long");
    auto slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0)
        if (auto d = node_state::makeDirs(path.substr(0, slash), 0700); !d)
            return makeError(Errc::InvalidConfig,
                             "relay socket " + path + ": " + d.error().message);
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    sys::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return makeError(Errc::Internal, std::string("relay socket: ") + std::strerror(errno));
    // Not had (a holder stuck for a second): bound all the same, as serving matters more.
    sys::Fd dirLock = lockDir(dirOf(path));
    ::unlink(path.c_str());  // a socket left by an earlier run, or a predecessor's
    // Created 0600 (umask) and chmod'ed again: only root may hand requests to our identity.
    mode_t old = ::umask(0177);
    int rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::umask(old);
    struct stat st {};
    if (rc != 0 || ::chmod(path.c_str(), 0600) != 0 || ::lstat(path.c_str(), &st) != 0 ||
        ::listen(fd.get(), 512) != 0) {
        int err = errno;
        return makeError(Errc::InvalidConfig, "relay socket " + path + ": " + std::strerror(err));
    }
    socketFile_ = std::make_pair(st.st_dev, st.st_ino);
    listenFd_ = std::move(fd);
    return {};
}

void RelayServer::probe() {
    // Only while down: an answer to GET /version (public) says the server is back.
    if (!opts_.health || !opts_.health->down.load()) return;
    k8s::RelayRequest r{
        opts_.server,
        "GET",
        kRelayProbePath,
        "",
        "",
        static_cast<uint32_t>(std::max<long long>(opts_.probeInterval.count(), 200))};
    (void)forward_(r);
}

void RelayServer::serve() {
    std::thread prober;
    if (opts_.health)
        prober = std::thread([this] {
            std::unique_lock lock(stopMu_);
            while (!stopping_.load()) {
                lock.unlock();
                probe();
                lock.lock();
                stopCv_.wait_for(lock, opts_.probeInterval, [this] { return stopping_.load(); });
            }
        });
    serveLoop();
    if (prober.joinable()) prober.join();
}

void RelayServer::serveLoop() {
    while (!stopping_.load()) {
        pollfd p{listenFd_.get(), POLLIN, 0};
        if (::poll(&p, 1, 500) <= 0) continue;
        sys::Fd conn(::accept4(listenFd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) continue;
        if (active_.load() >= opts_.maxConnections) continue;  // closed: the plugin goes direct
        {
            std::lock_guard lock(connsMu_);
            conns_.push_back(conn.get());
        }
        ++active_;
        std::thread([this, conn = std::move(conn)]() mutable {
            handle(conn.get());
            std::lock_guard lock(connsMu_);
            std::erase(conns_, conn.get());
            conn.reset();
            --active_;
            connsDone_.notify_all();  // under the lock: serve() cannot return before this ends
        }).detach();
    }
    // Stopping: wake every handler blocked on its client, then wait for all of them.
    std::unique_lock lock(connsMu_);
    for (int fd : conns_) ::shutdown(fd, SHUT_RDWR);
    connsDone_.wait(lock, [this] { return active_.load() == 0; });
}

void RelayServer::stop() {
    {
        std::lock_guard lock(stopMu_);
        stopping_.store(true);
    }
    stopCv_.notify_all();
    if (!socketFile_) return;
    // Under the directory's lock, so that no successor binds between the check and the unlink;
    // not had: the socket stays (a stale one refuses connections, and the next bind replaces it).
    sys::Fd dirLock = lockDir(dirOf(opts_.socketPath));
    struct stat st {};
    if (dirLock && ::lstat(opts_.socketPath.c_str(), &st) == 0 &&
        std::make_pair(st.st_dev, st.st_ino) == *socketFile_)
        ::unlink(opts_.socketPath.c_str());
    socketFile_.reset();
}

void RelayServer::handle(int fd) {
    while (!stopping_.load()) {
        auto frame = k8s::readFrame(fd, k8s::kMaxRelayFrame, Clock::now() + kIdleLimit);
        if (!frame) return;
        auto req = k8s::decodeRelayRequest(*frame);
        k8s::RelayResponse resp;
        if (!req) {
            resp = {k8s::RelayResponse::Kind::Refused, 0, -1, "unreadable request"};
        } else {
            req->timeoutMs = static_cast<uint32_t>(
                std::min<long long>(req->timeoutMs, opts_.maxTimeout.count()));
            // Taken: say so at once, so the plugin waits for the answer instead of taking a
            // busy relay for a hung one. Not if the plugin has given up meanwhile.
            if (req->wantAck) {
                k8s::RelayResponse ack{k8s::RelayResponse::Kind::Accepted, 0, -1, ""};
                if (!k8s::writeFrame(fd, k8s::encodeRelayResponse(ack),
                                     Clock::now() + std::chrono::seconds(1)))
                    return;
            }
            resp = relayAnswer(opts_, *req, forward_);
            ++served_;
        }
        auto deadline = Clock::now() + std::chrono::seconds(5);
        if (!k8s::writeFrame(fd, k8s::encodeRelayResponse(resp), deadline)) return;
        if (!req) return;
    }
}

}  // namespace allot::gc
