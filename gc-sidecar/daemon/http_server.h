#pragma once
// A tiny HTTP server for /metrics, /healthz and /readyz. http_server.cpp is the only user of
// cpp-httplib.

#include <functional>
#include <memory>
#include <string>

#include "core/result.h"

namespace allot::gc {

struct HttpReply {
    int status = 200;
    std::string contentType = "text/plain; charset=utf-8";
    std::string body;
};

class HttpServer {
  public:
    HttpServer();
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // GET `path`. Routes are added before bind().
    void route(const std::string& path, std::function<HttpReply()> handler);
    // Errors: InvalidConfig when the address cannot be bound (naming it).
    core::Result<void> bind(const std::string& host, int port);
    // Serves until stop(); call after a successful bind().
    void serve();
    void stop();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace allot::gc
