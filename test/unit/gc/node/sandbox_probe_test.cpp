#include "gc-sidecar/node/sandbox_probe.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "sys/fd.h"

using namespace allot;

TEST_CASE(
    "the namespace probe reads local IPv4 addresses from fib_trie, not routes or broadcasts") {
    const std::string trie = R"(Main:
  +-- 0.0.0.0/0 3 0 4
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.61.0.0/24 2 0 2
        |-- 10.61.0.0
           /24 link UNICAST
        |-- 10.61.0.7
           /32 host LOCAL
        |-- 10.61.0.255
           /32 link BROADCAST
Local:
  +-- 10.61.0.0/24 2 0 2
     |-- 10.61.0.7
        /32 host LOCAL
)";
    auto got = gc::localAddressesFromFibTrie(trie);
    REQUIRE(got.size() == 1);
    CHECK(got.begin()->str() == "10.61.0.7");
}

TEST_CASE("the namespace probe reads IPv6 addresses from if_inet6") {
    const std::string text =
        "fd000000000000000000000000000005 02 40 00 80     net1\n"
        "00000000000000000000000000000001 01 80 10 80       lo\n"
        "garbage\n";
    auto got = gc::addressesFromIfInet6(text);
    CHECK(got.size() == 2);
    CHECK(got.count(*core::IpAddress::parse("fd00::5")) == 1);
}

TEST_CASE("the namespace probe sees an address in this process's own namespace only when asked") {
    // /proc/self is allot-gc's own namespace: always left out, so an empty directory list
    // and a /proc holding only ourselves gives no namespace at all.
    auto r = gc::probeNodeAddresses({}, "/nonexistent-proc");
    CHECK_FALSE(r.ok());  // no /proc: an error, never an empty "nothing held"
}

namespace {

// A scratch directory standing in for /proc and the netns directories, removed at the end.
struct FakeNode {
    std::string dir;
    FakeNode() {
        std::string tmpl = std::filesystem::temp_directory_path().string() + "/allot-probe-XXXXXX";
        REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
        dir = tmpl;
        std::filesystem::create_directories(dir + "/proc/self/ns");
        std::filesystem::create_directories(dir + "/netns");
        std::filesystem::create_directories(dir + "/net");  // no fib_trie, no if_inet6
    }
    ~FakeNode() { std::filesystem::remove_all(dir); }
    std::string proc() const { return dir + "/proc"; }
    std::string netns() const { return dir + "/netns"; }
    // The probe's own namespace ("self") is `target`.
    void self(const std::string& target) const {
        std::filesystem::create_symlink(target, dir + "/proc/self/ns/net");
    }
    // Process `pid` lives in the namespace `target` names.
    void process(int pid, const std::string& target) const {
        const std::string ns = dir + "/proc/" + std::to_string(pid) + "/ns";
        std::filesystem::create_directories(ns);
        std::filesystem::create_symlink(target, ns + "/net");
    }
    // A file that is not a namespace, for "self": every real namespace is then another's.
    std::string notANamespace() const {
        const std::string p = dir + "/plain";
        std::ofstream(p) << "x";
        return p;
    }
};

// Entering namespaces needs CAP_SYS_ADMIN: without it, the tests that read a real one are moot.
bool canEnterNamespaces() {
    bool ok = false;
    std::thread([&] {
        sys::Fd fd(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
        ok = fd && ::setns(fd.get(), CLONE_NEWNET) == 0;
    }).join();
    if (!ok) MESSAGE("skipped: entering a network namespace needs CAP_SYS_ADMIN");
    return ok;
}

// What a probe answered, for a failed check (doctest may print it for a passing one too).
std::string answer(const core::Result<gc::ProbeReport>& r) {
    if (!r) return r.error().message;
    return "reported " + std::to_string(r->namespaces) + " namespaces, " +
           std::to_string(r->addresses.size()) + " addresses";
}

}  // namespace

TEST_CASE("the namespace probe reads the addresses of a namespace it enters") {
    if (!canEnterNamespaces()) return;
    FakeNode node;
    node.self(node.notANamespace());
    node.process(1, "/proc/self/ns/net");
    node.process(2, "/proc/self/ns/net");  // the same namespace: read once
    auto r = gc::probeNodeAddresses({node.netns()}, node.proc());
    REQUIRE_MESSAGE(r.ok(), answer(r));
    CHECK(r->namespaces == 1);
    CHECK(r->addresses.count(*core::IpAddress::parse("127.0.0.1")) == 1);
}

TEST_CASE("the namespace probe fails when a namespace that is still there cannot be opened") {
    FakeNode node;
    node.self("/proc/self/ns/net");
    // A socket: stat sees it, open fails (ENXIO), as for a namespace the probe may not open.
    const std::string path = node.netns() + "/held";
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(s >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof addr.sun_path);
    std::strcpy(addr.sun_path, path.c_str());
    REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    // A process that ended after the listing is skipped.
    node.process(7, node.dir + "/gone");
    auto r = gc::probeNodeAddresses({node.netns()}, node.proc());
    ::close(s);
    // Before: the namespace was skipped and the probe reported what it saw, as the whole node.
    REQUIRE_MESSAGE(!r.ok(), answer(r));
    CHECK(r.code() == core::Errc::Internal);
    CHECK(r.error().message.find(path) != std::string::npos);
}

TEST_CASE(
    "the namespace probe fails past its entry limit rather than report the namespaces it saw") {
    FakeNode node;
    node.self("/proc/self/ns/net");
    for (int pid = 1; pid <= 4; ++pid) node.process(pid, "/proc/self/ns/net");
    gc::ProbeOptions small;
    small.maxEntries = 3;
    auto r = gc::probeNodeAddresses({node.netns()}, node.proc(), small);
    // Before: the scan stopped at the limit and the rest counted as holding nothing.
    REQUIRE_MESSAGE(!r.ok(), answer(r));
    CHECK(r.code() == core::Errc::TooLarge);
    CHECK(r.error().message.find("more than 3") != std::string::npos);
    CHECK(gc::probeNodeAddresses({node.netns()}, node.proc()).ok());
}

TEST_CASE("the namespace probe fails past its namespace limit rather than read only some") {
    if (!canEnterNamespaces()) return;
    // Two namespaces: this process's and a new one a thread of it enters.
    std::promise<pid_t> entered;
    std::promise<void> done;
    std::thread other([&] {
        if (::unshare(CLONE_NEWNET) != 0) {
            entered.set_value(-1);
            return;
        }
        entered.set_value(static_cast<pid_t>(::syscall(SYS_gettid)));
        done.get_future().wait();
    });
    const pid_t tid = entered.get_future().get();
    FakeNode two;
    two.self(two.notANamespace());
    two.process(1, "/proc/self/ns/net");
    two.process(2, "/proc/self/task/" + std::to_string(tid) + "/ns/net");
    gc::ProbeOptions one;
    one.maxNamespaces = 1;
    auto n = gc::probeNodeAddresses({two.netns()}, two.proc(), one);
    auto all = gc::probeNodeAddresses({two.netns()}, two.proc());
    done.set_value();
    other.join();
    REQUIRE(tid > 0);
    REQUIRE_MESSAGE(!n.ok(), answer(n));
    CHECK(n.code() == core::Errc::TooLarge);
    REQUIRE_MESSAGE(all.ok(), answer(all));
    CHECK(all->namespaces == 2);
}

TEST_CASE("the namespace probe fails when it cannot read a namespace's addresses") {
    if (!canEnterNamespaces()) return;
    FakeNode node;
    node.self(node.notANamespace());
    node.process(1, "/proc/self/ns/net");
    gc::ProbeOptions blind;
    blind.netDir = node.dir + "/net";  // fib_trie cannot be opened there
    auto r = gc::probeNodeAddresses({node.netns()}, node.proc(), blind);
    // Before: an unreadable fib_trie read as a namespace without addresses.
    REQUIRE_MESSAGE(!r.ok(), answer(r));
    CHECK(r.code() == core::Errc::Internal);
    CHECK(r.error().message.find("fib_trie") != std::string::npos);
}
