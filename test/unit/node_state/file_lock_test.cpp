// The node's pool lock (node/file_lock.h) under the engine's calls: the directory it keeps,
// concurrent calls on one node, and how the lock and the commit queue hand requests over.
#include "node_state/file_lock.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <future>
#include <numeric>
#include <set>
#include <thread>

#include "../store/store_ref.h"
#include "engine/add.h"
#include "node_state/files.h"
#include "node_state_fixture.h"

using namespace allot;
using core::Errc;
using engine::Clock;
using engine::CommitQueue;
using engine::PoolLocker;
using test::config;
using test::kBig;
using test::kBigPool;
using test::kPoolKey;
using test::owner;

TEST_CASE("the node lock's missing directory is made private (0700), each lock file 0600") {
    test::Node n;
    const std::string dir = n.path() + "/a/b/locks";
    auto locker = node_state::makeFileLocker(dir);
    const auto cfg = config(kBig);
    auto ctx = n.context(cfg);
    ctx.locker = locker.get();
    REQUIRE(engine::add(ctx, cfg, "net", owner("c1"), {}));
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    const std::string file = dir + "/" + node_state::poolFileName(kPoolKey) + ".lock";
    REQUIRE(::lstat(file.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE(
    "an ADD that cannot take the node lock by its deadline fails with Transient, writes nothing") {
    test::Node n;
    auto other = node_state::makeFileLocker(n.path());  // another process holds the pool's lock
    auto held = other->acquire(kPoolKey, Clock::now() + std::chrono::seconds(1));
    REQUIRE(held);
    const auto cfg = config(R"("range":"10.1.0.0/24","deadline_ms":200)");
    const auto start = Clock::now();
    auto a = test::Call(n, cfg).add(cfg, owner("c1"));
    REQUIRE_FALSE(a);
    CHECK(a.code() == Errc::Transient);
    CHECK(a.error().message.find("node lock") != std::string::npos);
    CHECK(Clock::now() - start >= std::chrono::milliseconds(150));
    CHECK(test::notFound(n.mem->getPool(kBigPool)));
    held->reset();  // once it is free, the same ADD gets its address
    CHECK(test::firstCidr(test::Call(n, cfg).add(cfg, owner("c1"))) == "10.1.0.1/24");
}

TEST_CASE("concurrent ADDs through the node lock and commit queue get distinct addresses") {
    test::Node n;
    const auto cfg = config(kBig);
    constexpr int kThreads = 6, kEach = 15;
    std::vector<std::vector<std::string>> got(kThreads);
    std::vector<int> served(kThreads, 0);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
        ts.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i) {
                const std::string cid = "c" + std::to_string(t) + "-" + std::to_string(i);
                test::Call call(n, cfg);
                auto a = call.add(cfg, owner(cid, cid));
                if (a) got[t].push_back(test::cidr(a->front()));
                served[t] += call.ctx.report.served;
            }
        });
    for (auto& t : ts) t.join();
    std::set<std::string> ips;
    size_t ok = 0;
    for (const auto& g : got) {
        ok += g.size();
        ips.insert(g.begin(), g.end());
    }
    CHECK(ok == kThreads * kEach);
    CHECK(ips.size() == ok);
    CHECK(n.allocations(kBigPool).size() == ok);
    MESSAGE("ADDs served by another call's write: " << std::accumulate(served.begin(), served.end(),
                                                                       0));
}

namespace {

int lastOctet(const std::string& cidr) {
    auto ip = cidr.substr(0, cidr.find('/'));
    return std::stoi(ip.substr(ip.rfind('.') + 1));
}

}  // namespace

TEST_CASE("concurrent ADDs from two configs sharing a pool each stay inside their own window") {
    test::Node n;
    const auto teamA = config(test::kTeamA), teamB = config(test::kTeamB);
    constexpr int kThreads = 8, kEach = 10;
    std::vector<std::vector<std::pair<bool, std::string>>> got(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
        ts.emplace_back([&, t] {
            const bool a = t % 2 == 0;
            for (int i = 0; i < kEach; ++i) {
                const std::string cid = "c" + std::to_string(t) + "-" + std::to_string(i);
                auto r = test::Call(n, a ? teamA : teamB).add(a ? teamA : teamB, owner(cid, cid));
                if (r) got[t].emplace_back(a, test::cidr(r->front()));
            }
        });
    for (auto& t : ts) t.join();
    std::set<std::string> seen;
    size_t count = 0;
    for (const auto& g : got)
        for (const auto& [a, addr] : g) {
            ++count;
            const int o = lastOctet(addr);
            if (a) {
                CHECK_MESSAGE((o >= 12 && o <= 59), "team A got " << addr);
            } else {
                CHECK_MESSAGE((o >= 100 && o <= 149), "team B got " << addr);
            }
            seen.insert(addr);
        }
    CHECK(count == kThreads * kEach);
    CHECK(seen.size() == count);
}

namespace {

// The node lock, and whoever takes it next: when a guard drops the lock, the next holder (another
// plugin process) takes what it finds queued for the pool, as a holder's waiting() does, and
// gives it back.
class NextHolderLocker : public PoolLocker {
  public:
    NextHolderLocker(const std::string& dir, std::vector<std::string>& taken)
        : inner_(node_state::makeFileLocker(dir)),
          queue_(node_state::makeFileCommitQueue(dir)),
          taken_(taken) {}
    core::Result<std::unique_ptr<Guard>> acquire(const std::string& pool,
                                                 Clock::time_point deadline) override {
        auto g = inner_->acquire(pool, deadline);
        if (!g) return g.error();
        return std::unique_ptr<Guard>(new NextHolder(std::move(*g), *queue_, pool, taken_));
    }

  private:
    class NextHolder : public Guard {
      public:
        NextHolder(std::unique_ptr<Guard> g, CommitQueue& q, std::string pool,
                   std::vector<std::string>& taken)
            : inner_(std::move(g)), queue_(q), pool_(std::move(pool)), taken_(taken) {}
        ~NextHolder() override {
            inner_.reset();
            auto self = queue_.submit(pool_, test::request("next-holder"));
            CHECK(self.ok());
            if (!self) return;
            std::vector<std::string> ids;
            for (auto& w : queue_.waiting(**self, 10)) {
                taken_.push_back(w.request.owner.containerId);
                ids.push_back(w.id);
            }
            queue_.giveBack(**self, ids);
        }

      private:
        std::unique_ptr<Guard> inner_;
        CommitQueue& queue_;
        std::string pool_;
        std::vector<std::string>& taken_;
    };
    std::unique_ptr<PoolLocker> inner_;
    std::unique_ptr<CommitQueue> queue_;
    std::vector<std::string>& taken_;
};

}  // namespace

TEST_CASE("the next holder of the node lock finds a finished ADD's request gone from the queue") {
    test::Node n;
    const auto cfg = config(kBig);
    std::vector<std::string> taken;
    test::Call call(n, cfg);
    NextHolderLocker locker(n.path(), taken);
    call.ctx.locker = &locker;
    REQUIRE(call.add(cfg, owner("finished")));
    // Before: the lock dropped while the request was still queued and its process alive, so the
    // next holder served it again (an entry for a container whose ADD may have failed since).
    CHECK_MESSAGE(taken.empty(),
                  "the next holder took the request of " << (taken.empty() ? "" : taken[0]));
    CHECK(n.allocations(kBigPool).size() == 1);
}

namespace {

// Pool writes that land only at `until`: an API server slow to take a big object.
class SlowWrites : public test::StoreRef<store::MemoryStore> {
  public:
    SlowWrites(std::shared_ptr<store::MemoryStore> s, const Clock::time_point& until)
        : StoreRef(std::move(s)), until_(until) {}
    core::Result<store::Pool> updatePool(store::Pool p) override {
        std::this_thread::sleep_until(until_);
        return StoreRef::updatePool(std::move(p));
    }

  private:
    const Clock::time_point& until_;
};

// Reservation creates that fail once the call's deadline has passed, as the Kubernetes client's
// requests do.
class DeadlineStore : public test::StoreRef<store::MemoryStore> {
  public:
    DeadlineStore(std::shared_ptr<store::MemoryStore> s, Clock::time_point deadline)
        : StoreRef(std::move(s)), deadline_(deadline) {}
    void setDeadline(Clock::time_point d) override { deadline_ = d; }
    core::Result<store::Reservation> createReservation(const store::Reservation& r) override {
        if (Clock::now() >= deadline_)
            return core::makeError(Errc::Transient, "create reservation: deadline exceeded");
        return StoreRef::createReservation(r);
    }

  private:
    Clock::time_point deadline_;
};

// The node lock; once taken the first time, it is held until the test says go on.
class GatedLocker : public PoolLocker {
  public:
    GatedLocker(std::string dir, std::promise<void>& held, std::shared_future<void> go)
        : inner_(node_state::makeFileLocker(std::move(dir))), held_(held), go_(std::move(go)) {}
    core::Result<std::unique_ptr<Guard>> acquire(const std::string& pool,
                                                 Clock::time_point deadline) override {
        auto g = inner_->acquire(pool, deadline);
        if (g && !gated_) {
            gated_ = true;
            held_.set_value();
            go_.wait();
        }
        return g;
    }

  private:
    std::unique_ptr<PoolLocker> inner_;
    std::promise<void>& held_;
    std::shared_future<void> go_;
    bool gated_ = false;
};

// SIGALRM, which ends a wait for the node lock, blocked in this thread and the threads it
// starts while in scope: it must reach the one thread whose wait is meant to end.
struct AlarmBlocked {
    sigset_t old{};
    AlarmBlocked() {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGALRM);
        pthread_sigmask(SIG_BLOCK, &s, &old);
    }
    ~AlarmBlocked() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

void takeAlarms() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
}

// The holder's own request and the waiter's are both in the queue.
bool bothQueued(const std::string& qdir) {
    if (!std::filesystem::exists(qdir)) return false;
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(qdir))
        n += e.path().extension() == ".req";
    return n == 2;
}

}  // namespace

TEST_CASE(
    "a queued ADD whose deadline passes while the holder writes its entry gets that entry and its "
    "reservation") {
    test::Node n;
    const auto cfg = config(kBig);
    REQUIRE(n.mem->createPool({kBigPool, "10.1.0.0/24", {}, {}}).ok());
    Clock::time_point writeLands = Clock::now();
    SlowWrites slow(n.mem, writeLands);
    std::promise<void> held, go;
    GatedLocker gated(n.path(), held, go.get_future().share());
    auto holderQueue = node_state::makeFileCommitQueue(n.path());
    engine::Context holder = n.context(cfg, &slow);
    holder.locker = &gated;
    holder.queue = holderQueue.get();

    AlarmBlocked blocked;
    core::Result<std::vector<engine::IpResult>> h = core::makeError(Errc::Internal, "not run");
    core::Result<std::vector<engine::IpResult>> w = h;
    std::thread ht([&] { h = engine::add(holder, cfg, "net", owner("holder"), {}); });
    held.get_future().wait();
    // Queued behind the holder, with two seconds to go: less than the holder's write takes.
    // The holder's write lands half a second after the waiter's deadline.
    writeLands = Clock::now() + std::chrono::milliseconds(2500);
    std::thread wt([&] {
        takeAlarms();
        const auto waiterCfg = config(R"("range":"10.1.0.0/24","deadline_ms":2000)");
        const auto deadline = Clock::now() + std::chrono::milliseconds(2000);
        DeadlineStore store(n.mem, deadline);
        auto locker = node_state::makeFileLocker(n.path());
        auto queue = node_state::makeFileCommitQueue(n.path());
        engine::Context ctx = n.context(waiterCfg, &store);
        ctx.deadline = deadline;
        ctx.locker = locker.get();
        ctx.queue = queue.get();
        w = engine::add(ctx, waiterCfg, "net", owner("waiter", "waiter"), {});
    });
    const std::string qdir = n.path() + "/" + kPoolKey + ".q";
    for (int i = 0; i < 500 && !bothQueued(qdir); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(bothQueued(qdir));
    go.set_value();
    ht.join();
    wt.join();

    REQUIRE_MESSAGE(h, (h ? "" : h.error().message));
    auto pool = n.allocations(kBigPool);
    const bool entry = core::findHolder(pool, "waiter", "net1").has_value();
    // Before: the waiter gave up at its deadline (Transient) while the holder wrote its entry,
    // which stayed behind for an ADD that had failed.
    CHECK_MESSAGE(entry == w.ok(), "waiter: " << (w ? "" : w.error().message));
    CHECK_MESSAGE(w, (w ? "" : w.error().message));
    CHECK(pool.size() == 2);
    CHECK(n.mem->listReservations()->size() == 2);
}
