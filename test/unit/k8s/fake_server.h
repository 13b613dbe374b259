#pragma once
// A loopback HTTP/1.1 server for tests of code that talks to the API server through
// k8s::Client: it answers one scripted reply per connection, in order.

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace allot::test {

// A loopback HTTP/1.1 server answering one scripted reply per connection, in order. A reply is
// written in pieces with a pause between them, so the client sees them as separate chunks.
class FakeServer {
  public:
    using Reply = std::vector<std::string>;

    explicit FakeServer(std::vector<Reply> replies) : replies_(std::move(replies)) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(fd_, 8) == 0);
        socklen_t len = sizeof addr;
        REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
        port_ = ntohs(addr.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeServer() {
        if (thread_.joinable()) thread_.join();
        ::close(fd_);
    }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    // Raw requests (head and body) received; waits for the server to finish first.
    const std::vector<std::string>& requests() {
        if (thread_.joinable()) thread_.join();
        return requests_;
    }

  private:
    void serve() {
        for (const Reply& reply : replies_) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 5000) != 1) return;  // the client gave up: do not hang the test
            const int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            requests_.push_back(readRequest(c));
            for (size_t i = 0; i < reply.size(); ++i) {
                if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
                if (!writeAll(c, reply[i])) break;  // the client hung up (an aborted watch)
            }
            ::shutdown(c, SHUT_WR);
            ::close(c);
        }
    }
    static std::string readRequest(int c) {
        std::string req;
        char buf[4096];
        size_t want = std::string::npos;
        while (want == std::string::npos || req.size() < want) {
            const ssize_t n = ::recv(c, buf, sizeof buf, 0);
            if (n <= 0) break;
            req.append(buf, static_cast<size_t>(n));
            const size_t end = req.find("\r\n\r\n");
            if (want == std::string::npos && end != std::string::npos) {
                std::string lower = req.substr(0, end);
                std::transform(lower.begin(), lower.end(), lower.begin(),
                               [](unsigned char ch) { return std::tolower(ch); });
                const size_t cl = lower.find("content-length:");
                want = end + 4 + (cl == std::string::npos ? 0 : std::stoul(lower.substr(cl + 15)));
            }
        }
        return req;
    }
    static bool writeAll(int c, const std::string& data) {
        size_t off = 0;
        while (off < data.size()) {
            const ssize_t n = ::send(c, data.data() + off, data.size() - off, MSG_NOSIGNAL);
            if (n <= 0) return false;
            off += static_cast<size_t>(n);
        }
        return true;
    }

    std::vector<Reply> replies_;
    std::vector<std::string> requests_;
    int fd_ = -1;
    int port_ = 0;
    std::thread thread_;
};

inline std::string response(int status, const std::string& body,
                            const std::string& extraHeaders = "") {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n" +
           "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n" +
           extraHeaders + "\r\n" + body;
}

}  // namespace allot::test
