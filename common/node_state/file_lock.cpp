#include "node_state/file_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>

#include "node_state/files.h"
#include "sys/fd.h"

namespace allot::node_state {

using engine::PoolLocker;

using sys::Fd;

using core::Errc;
using core::makeError;
using Clock = std::chrono::steady_clock;

namespace {

void onAlarm(int) {}

class FileGuard : public PoolLocker::Guard {
  public:
    explicit FileGuard(Fd fd) : fd_(std::move(fd)) {}
    ~FileGuard() override { ::flock(fd_.get(), LOCK_UN); }

  private:
    Fd fd_;
};

class FileLocker : public PoolLocker {
  public:
    explicit FileLocker(std::string dir) : dir_(std::move(dir)) {}

    core::Result<std::unique_ptr<Guard>> acquire(const std::string& pool,
                                                 Clock::time_point deadline) override {
        if (auto d = makeDirs(dir_, 0700); !d) return d.error();
        std::string path = dir_ + "/" + poolFileName(pool) + ".lock";
        Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!fd)
            return makeError(Errc::Internal, "open lock " + path + ": " + std::strerror(errno));
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0)
            return std::unique_ptr<Guard>(new FileGuard(std::move(fd)));
        // Contended: block, with SIGALRM (installed without SA_RESTART) bounding the wait.
        auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
        if (left.count() <= 0)
            return makeError(Errc::Transient, "timed out waiting for the node lock " + path);
        struct sigaction sa {
        }, old{};
        sa.sa_handler = onAlarm;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGALRM, &sa, &old);
        itimerval t{};
        if (deadline != Clock::time_point::max()) {
            t.it_value.tv_sec = static_cast<time_t>(left.count() / 1000000);
            t.it_value.tv_usec = static_cast<suseconds_t>(left.count() % 1000000);
        }
        ::setitimer(ITIMER_REAL, &t, nullptr);
        int rc = ::flock(fd.get(), LOCK_EX);
        int err = errno;
        itimerval off{};
        ::setitimer(ITIMER_REAL, &off, nullptr);
        ::sigaction(SIGALRM, &old, nullptr);
        if (rc == 0) return std::unique_ptr<Guard>(new FileGuard(std::move(fd)));
        if (err == EINTR)
            return makeError(Errc::Transient, "timed out waiting for the node lock " + path);
        return makeError(Errc::Internal, "lock " + path + ": " + std::strerror(err));
    }

  private:
    std::string dir_;
};

}  // namespace

std::unique_ptr<PoolLocker> makeFileLocker(const std::string& dir) {
    return std::make_unique<FileLocker>(dir);
}

}  // namespace allot::node_state
