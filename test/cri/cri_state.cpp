// What allot-gc's CRI client (gc-sidecar/node/cri_runtime.h) says, for test/cri/cri_test.sh:
//
//   cri_state SOCKET ID [N]     ready, not_ready, not_found or unknown (why on stderr); with N,
//                               asks N times from 4 threads through the one client and prints
//                               the answer when all agree, else every answer seen
//   cri_state SOCKET --version  the runtime's version line ("containerd 1.6.20 (CRI v1)")
//
// Exit status 0 when the runtime was asked (whatever it answered), 1 when --version failed,
// 2 on a usage or set-up error.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gc-sidecar/node/cri_runtime.h"

using namespace allot;

namespace {

int printVersion(gc::CriRuntime& rt) {
    auto v = rt.version();
    if (!v) {
        std::cerr << "cri_state: " << v.error().message << "\n";
        return 1;
    }
    std::cout << *v << "\n";
    return 0;
}

// Asks `times` times from 4 threads; prints the answer, or every distinct one with its count.
int printState(gc::CriRuntime& rt, const std::string& id, int times) {
    std::mutex mu;
    std::map<std::string, int> seen;
    std::map<std::string, std::string> why;
    std::atomic<int> left{times};
    auto ask = [&] {
        while (left.fetch_sub(1) > 0) {
            std::string detail;
            const std::string a(core::name(rt.sandboxState(id, &detail)));
            std::lock_guard<std::mutex> lock(mu);
            ++seen[a];
            if (!detail.empty()) why[a] = detail;
        }
    };
    std::vector<std::thread> threads;
    for (int i = 0; i < (times > 1 ? 4 : 1); ++i) threads.emplace_back(ask);
    for (auto& t : threads) t.join();
    for (const auto& [a, n] : seen) {
        std::cout << a << (seen.size() > 1 ? " x" + std::to_string(n) : "") << "\n";
        if (why.count(a)) std::cerr << a << ": " << why[a] << "\n";
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3 || argc > 4) {
        std::cerr << "usage: cri_state SOCKET ID [N] | cri_state SOCKET --version\n";
        return 2;
    }
    auto rt = gc::CriRuntime::open(argv[1], std::chrono::seconds(5));
    if (!rt) {
        std::cerr << "cri_state: " << rt.error().message << "\n";
        return 2;
    }
    const std::string arg = argv[2];
    if (arg == "--version") return printVersion(**rt);
    const int times = argc == 4 ? std::atoi(argv[3]) : 1;
    if (times < 1) {
        std::cerr << "cri_state: N must be a positive number\n";
        return 2;
    }
    return printState(**rt, arg, times);
}
