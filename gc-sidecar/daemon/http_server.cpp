#include "gc-sidecar/daemon/http_server.h"

#include <httplib.h>

namespace allot::gc {

struct HttpServer::Impl {
    httplib::Server server;
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {
    // Probes and a scraper: two threads are plenty, and keep the memory small.
    impl_->server.new_task_queue = [] { return new httplib::ThreadPool(2); };
    impl_->server.set_keep_alive_max_count(10);
    impl_->server.set_read_timeout(5, 0);
    impl_->server.set_write_timeout(5, 0);
}

HttpServer::~HttpServer() = default;

void HttpServer::route(const std::string& path, std::function<HttpReply()> handler) {
    impl_->server.Get(path,
                      [h = std::move(handler)](const httplib::Request&, httplib::Response& res) {
                          HttpReply r = h();
                          res.status = r.status;
                          res.set_content(r.body, r.contentType.c_str());
                      });
}

core::Result<void> HttpServer::bind(const std::string& host, int port) {
    bool ok = false;
    try {
        ok = impl_->server.bind_to_port(host.c_str(), port);
    } catch (const std::exception& e) {
        return core::makeError(core::Errc::InvalidConfig,
                               "listen " + host + ":" + std::to_string(port) + ": " + e.what());
    }
    if (!ok)
        return core::makeError(core::Errc::InvalidConfig, "cannot listen on " + host + ":" +
                                                              std::to_string(port) +
                                                              " (in use, or not an address here)");
    return {};
}

void HttpServer::serve() {
    try {
        impl_->server.listen_after_bind();
    } catch (const std::exception&) {
        // listen_after_bind only returns on stop() or a fatal socket error; either ends serving.
    }
}

void HttpServer::stop() {
    impl_->server.stop();
}

}  // namespace allot::gc
