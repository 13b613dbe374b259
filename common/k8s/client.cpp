#include "k8s/client.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "k8s/status.h"
#include "k8s_api/resources.h"

namespace allot::k8s {

using core::Errc;
using core::makeError;
using core::Result;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kTokenRereadInterval = std::chrono::seconds(60);
// An exec plugin may wait for a login in a browser; the request's deadline bounds it too.
constexpr auto kExecPluginTimeout = std::chrono::minutes(5);
constexpr auto kWatchSlack = std::chrono::seconds(30);
constexpr int64_t kDefaultPageSize = 500;

class Query {
  public:
    void add(std::string_view key, std::string_view value) {
        if (value.empty()) return;
        q_ += q_.empty() ? '?' : '&';
        q_ += key;
        q_ += '=';
        q_ += urlEscape(value);
    }
    std::string appendTo(const std::string& path) const {
        if (q_.empty()) return path;
        if (path.find('?') == std::string::npos) return path + q_;
        return path + "&" + q_.substr(1);
    }

  private:
    std::string q_;
};

std::string resourceVersionOf(const json::Value& obj) {
    const json::Value* md = obj.find("metadata");
    if (!md || !md->isObject()) return {};
    const json::Value* rv = md->find("resourceVersion");
    return rv && rv->isString() ? rv->asString() : std::string();
}

const char* contentTypeOf(PatchType t) {
    switch (t) {
        case PatchType::Merge:
            return "application/merge-patch+json";
        case PatchType::Json:
            return "application/json-patch+json";
        case PatchType::Strategic:
            return "application/strategic-merge-patch+json";
        case PatchType::Apply:
            return "application/apply-patch+yaml";  // JSON is YAML
    }
    return "application/merge-patch+json";
}

std::string readToken(const std::string& file) {
    auto t = readSmallFile(file, "token file");
    if (!t) return {};
    std::string s = std::move(*t);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

core::Error toError(const TransportError& e) {
    switch (e.kind) {
        case TransportError::Kind::Connect:
        case TransportError::Kind::Timeout:
        case TransportError::Kind::Tls:
        case TransportError::Kind::Protocol:
        case TransportError::Kind::Relayed:
            return makeError(Errc::Transient, e.message);
        case TransportError::Kind::LocalConfig:
            return makeError(Errc::InvalidConfig, e.message);
        case TransportError::Kind::Internal:
            break;
    }
    return makeError(Errc::Internal, e.message);
}

Client::Client(ClusterConfig cfg, Options options, TlsConfig tls)
    : cfg_(std::move(cfg)),
      options_(std::move(options)),
      tls_(std::move(tls)),
      tokenReadAt_(Clock::now()) {}

Result<Client> Client::fromConfig(ClusterConfig cfg, Options options) {
    if (cfg.server.empty()) return makeError(Errc::InvalidConfig, "no API server address");
    while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
    if (cfg.identity.empty()) cfg.identity = "the credentials configured for " + cfg.server;
    if (!cfg.tokenFile.empty()) {
        auto t = readSmallFile(cfg.tokenFile, "token file");
        if (!t) return t.error();
        cfg.token = std::move(*t);
        while (!cfg.token.empty() && std::isspace(static_cast<unsigned char>(cfg.token.back())))
            cfg.token.pop_back();
        if (cfg.token.empty())
            return makeError(Errc::InvalidConfig, "token file " + cfg.tokenFile + " is empty");
    }
    TlsConfig tls;
    tls.caData = cfg.caData;
    tls.caFile = cfg.caFile;
    tls.insecureSkipVerify = cfg.insecureSkipTlsVerify;
    tls.clientCertData = cfg.clientCertData;
    tls.clientCertFile = cfg.clientCertFile;
    tls.clientKeyData = cfg.clientKeyData;
    tls.clientKeyFile = cfg.clientKeyFile;
    return Client(std::move(cfg), std::move(options), std::move(tls));
}

Result<HttpClient*, TransportError> Client::direct() {
    if (!http_) {
        auto http = HttpClient::create(tls_, options_.userAgent);
        if (!http) return http.error();
        http->setBearerToken(cfg_.token);
        http_.emplace(std::move(*http));
    }
    return &*http_;
}

bool Client::relayUsable() {
    if (relayState_ == RelayState::Untried) {
        if (!options_.relaySocket.empty()) relay_ = RelayClient::connect(options_.relaySocket);
        relayState_ = relay_ ? RelayState::Using : RelayState::Off;
    }
    return relayState_ == RelayState::Using;
}

std::optional<std::string> Client::askRelay(const std::string& path) {
    if (!relayLocal(path) || !relayUsable()) return std::nullopt;
    auto timeout = timeoutFor("ask", path, options_.requestTimeout);
    if (!timeout) return std::nullopt;
    bool sent = false;
    auto r =
        relay_->send({cfg_.server, "GET", path, "", "", static_cast<uint32_t>(timeout->count())},
                     *timeout, sent);
    if (!r) {  // the connection is in an unknown state: the rest goes direct
        relayState_ = RelayState::Off;
        relay_.reset();
        return std::nullopt;
    }
    if (r->kind != RelayResponse::Kind::Answered || r->status != 200) return std::nullopt;
    return std::move(r->body);
}

std::optional<Result<HttpResponse, TransportError>> Client::viaRelay(
    std::string_view method, const std::string& path, const std::string& body,
    std::string_view contentType, milliseconds timeout, std::string_view accept) {
    if (!relayUsable() || !relayAllowed(method, path)) return std::nullopt;
    bool sent = false;
    RelayRequest req{cfg_.server, std::string(method),
                     path,        std::string(contentType),
                     body,        static_cast<uint32_t>(timeout.count())};
    req.accept = accept;
    auto r = relay_->send(req, timeout, sent);
    if (!r || r->kind == RelayResponse::Kind::Refused) {
        // The relay is gone or will not serve us: the rest of this client's life goes direct.
        relayState_ = RelayState::Off;
        relay_.reset();
        if (!r && sent) return Result<HttpResponse, TransportError>(r.error());
        return std::nullopt;
    }
    ++relayed_;
    if (r->kind == RelayResponse::Kind::Failed)
        return Result<HttpResponse, TransportError>(
            TransportError{TransportError::Kind::Relayed, "node relay: " + r->body});
    HttpResponse resp{static_cast<long>(r->status), std::move(r->body), std::nullopt};
    if (r->retryAfterSeconds >= 0) resp.retryAfterSeconds = r->retryAfterSeconds;
    return Result<HttpResponse, TransportError>(std::move(resp));
}

Result<HttpResponse, TransportError> Client::raw(std::string_view method, const std::string& path,
                                                 const std::string& body,
                                                 std::string_view contentType, milliseconds timeout,
                                                 std::string_view accept) {
    if (auto r = refreshCredentials(); !r) return r.error();
    ++requests_;
    auto http = direct();
    if (!http) return http.error();
    auto resp = (*http)->send(method, cfg_.server + path, body, contentType, timeout, accept);
    if (resp && resp->status == 429 && options_.onThrottled) options_.onThrottled();
    return resp;
}

Result<void, TransportError> Client::refreshCredentials() {
    if (cfg_.exec) return refreshExec();
    // Projected ServiceAccount tokens rotate; a long-lived client picks up the new one. A
    // failed read keeps the old token (the server will say 401 if it is really gone).
    if (cfg_.tokenFile.empty()) return {};
    const auto now = Clock::now();
    if (!tokenStale_ && now - tokenReadAt_ < kTokenRereadInterval) return {};
    tokenReadAt_ = now;
    tokenStale_ = false;
    std::string t = readToken(cfg_.tokenFile);
    if (!t.empty() && t != cfg_.token) {
        cfg_.token = std::move(t);
        if (http_) http_->setBearerToken(cfg_.token);
    }
    return {};
}

Result<void, TransportError> Client::refreshExec() {
    const bool rejected = std::exchange(tokenStale_, false);
    if (execCred_ && !rejected && !execCred_->expiredAt(std::chrono::system_clock::now()))
        return {};
    auto timeout = timeoutFor("run exec plugin", cfg_.exec->command, kExecPluginTimeout);
    if (!timeout) return TransportError{TransportError::Kind::Timeout, timeout.error().message};
    auto cred = execCredential(*cfg_.exec, *timeout, rejected && execCred_ ? &*execCred_ : nullptr);
    if (!cred)
        return TransportError{cred.code() == Errc::Transient ? TransportError::Kind::Timeout
                                                             : TransportError::Kind::LocalConfig,
                              cfg_.identity + ": " + cred.error().message};
    if (cred->clientCertData != tls_.clientCertData || cred->clientKeyData != tls_.clientKeyData) {
        tls_.clientCertData = cred->clientCertData;  // a new certificate: a new connection
        tls_.clientKeyData = cred->clientKeyData;
        http_.reset();
    }
    cfg_.token = cred->token;
    if (http_) http_->setBearerToken(cfg_.token);
    execCred_ = std::move(*cred);
    return {};
}

Result<milliseconds> Client::timeoutFor(const char* verb, const std::string& path,
                                        milliseconds want) const {
    if (options_.deadline == Clock::time_point::max()) return want;
    const auto left = options_.deadline - Clock::now();
    if (left <= Clock::duration::zero())
        return makeError(Errc::Transient, std::string(verb) + " " + path.substr(0, path.find('?')) +
                                              ": deadline exceeded");
    // Round up so that a sliver of time left is still a (tiny) positive timeout.
    const auto leftMs = std::chrono::ceil<milliseconds>(left);
    return want.count() > 0 ? std::min(want, leftMs) : leftMs;
}

Result<std::string> Client::request(const char* verb, std::string_view method,
                                    const std::string& path, const std::string& body,
                                    std::string_view contentType, std::string_view accept) {
    auto timeout = timeoutFor(verb, path, options_.requestTimeout);
    if (!timeout) return timeout.error();
    std::string identity = cfg_.identity;
    auto resp = [&]() -> Result<HttpResponse, TransportError> {
        if (auto relayed = viaRelay(method, path, body, contentType, *timeout, accept)) {
            ++requests_;
            identity = "allot-gc's identity (through the node relay " + options_.relaySocket + ")";
            return std::move(*relayed);
        }
        return raw(method, path, body, contentType, *timeout, accept);
    }();
    if (!resp) {
        lastRetryAfter_.reset();
        return toError(resp.error());
    }
    lastRetryAfter_ = resp->retryAfterSeconds;
    // A rotated token file may already hold a valid token: read it on the next request.
    if (resp->status == 401) tokenStale_ = true;
    if (auto err =
            mapStatus(resp->status, resp->body, verb, path, identity, resp->retryAfterSeconds))
        return *err;
    return std::move(resp->body);
}

Result<json::Value> Client::call(const char* verb, std::string_view method, const std::string& path,
                                 const std::string& body, std::string_view contentType,
                                 const std::vector<json::Tap>& taps, std::string_view accept) {
    auto text = request(verb, method, path, body, contentType, accept);
    if (!text) return text.error();
    if (text->empty()) return json::Value();
    auto v = json::parse(*text, taps);
    if (!v)
        return makeError(Errc::Decode, std::string(verb) + " " + path +
                                           ": response is not JSON: " + v.error().message);
    return v;
}

Result<json::Value> Client::get(const std::string& path, const std::vector<json::Tap>& taps) {
    return call("get", "GET", path, {}, {}, taps);
}

Result<json::Value> Client::create(const std::string& path, const json::Value& body) {
    return call("create", "POST", path, body.dump(), "application/json");
}

Result<json::Value> Client::replace(const std::string& path, const json::Value& body) {
    return call("update", "PUT", path, body.dump(), "application/json");
}

Result<json::Value> Client::replaceEncoded(const std::string& path, const std::string& body,
                                           const std::vector<json::Tap>& taps) {
    return call("update", "PUT", path, body, "application/json", taps, kAcceptMetadata);
}

Result<json::Value> Client::patch(const std::string& path, const json::Value& body, PatchType type,
                                  const std::string& fieldManager, bool force) {
    Query q;
    // Server-side apply requires a field manager; default to our user agent.
    q.add("fieldManager",
          fieldManager.empty() && type == PatchType::Apply ? options_.userAgent : fieldManager);
    if (force && type == PatchType::Apply) q.add("force", "true");
    return call("patch", "PATCH", q.appendTo(path), body.dump(), contentTypeOf(type));
}

Result<json::Value> Client::remove(const std::string& path,
                                   const std::optional<Preconditions>& pre) {
    if (!pre) return call("delete", "DELETE", path, {}, {});
    json::Value opts = json::Value::object();
    opts.set("apiVersion", json::Value::string("v1"));
    opts.set("kind", json::Value::string("DeleteOptions"));
    json::Value p = json::Value::object();
    if (!pre->uid.empty()) p.set("uid", json::Value::string(pre->uid));
    if (!pre->resourceVersion.empty())
        p.set("resourceVersion", json::Value::string(pre->resourceVersion));
    opts.set("preconditions", std::move(p));
    return call("delete", "DELETE", path, opts.dump(), "application/json");
}

Result<json::Value> Client::list(const std::string& path, const ListOptions& opts) {
    return listPage(path, opts, {});
}

Result<json::Value> Client::listPage(const std::string& path, const ListOptions& opts,
                                     const std::vector<json::Tap>& taps) {
    Query q;
    q.add("labelSelector", opts.labelSelector);
    q.add("fieldSelector", opts.fieldSelector);
    q.add("resourceVersion", opts.resourceVersion);
    if (opts.limit > 0) q.add("limit", std::to_string(opts.limit));
    q.add("continue", opts.continueToken);
    auto v = call("list", "GET", q.appendTo(path), {}, {}, taps);
    if (v && !v->isObject())
        return makeError(Errc::Decode, "list " + path + ": response is not a JSON object");
    return v;
}

Result<std::string> Client::listEach(const std::string& path, ListOptions opts,
                                     const std::function<bool(json::Value& item)>& onItem,
                                     const std::vector<json::Tap>& itemTaps) {
    if (opts.limit <= 0) opts.limit = kDefaultPageSize;
    // Items are handed over as the page is parsed: one item is held at a time, not the page.
    bool stopped = false;
    std::vector<json::Tap> taps{{{"items", "[]"}, [&](const std::string&, json::Value& item) {
                                     stopped = !onItem(item);
                                     return !stopped;
                                 }}};
    for (const auto& t : itemTaps) {
        taps.push_back(t);
        taps.back().path.insert(taps.back().path.begin(), {"items", "[]"});
    }
    std::string listRv;
    for (bool first = true;; first = false) {
        auto page = listPage(path, opts, taps);
        if (!page) return page.error();
        if (first) listRv = resourceVersionOf(*page);
        if (stopped) return listRv;
        if (const json::Value* items = page->find("items");
            items && !items->isArray() && !items->isNull())
            return makeError(Errc::Decode, "list " + path + ": items is not an array");
        std::string next;
        if (const json::Value* md = page->find("metadata"); md && md->isObject()) {
            if (const json::Value* c = md->find("continue"); c && c->isString())
                next = c->asString();
        }
        if (next.empty()) return listRv;
        // The continue token pins the snapshot; the server rejects resourceVersion with it.
        opts.continueToken = std::move(next);
        opts.resourceVersion.clear();
    }
}

Result<std::string> Client::watch(const std::string& path, const WatchOptions& opts,
                                  const std::function<bool(const WatchEvent&)>& onEvent) {
    Query q;
    q.add("watch", "true");
    q.add("labelSelector", opts.labelSelector);
    q.add("fieldSelector", opts.fieldSelector);
    q.add("resourceVersion", opts.resourceVersion);
    if (opts.allowWatchBookmarks) q.add("allowWatchBookmarks", "true");
    if (opts.timeoutSeconds > 0) q.add("timeoutSeconds", std::to_string(opts.timeoutSeconds));
    const std::string full = q.appendTo(path);

    // The server ends the watch after timeoutSeconds; our own limit only catches a dead peer.
    const milliseconds want = opts.timeoutSeconds > 0
                                  ? std::chrono::duration_cast<milliseconds>(
                                        std::chrono::seconds(opts.timeoutSeconds) + kWatchSlack)
                                  : milliseconds(0);
    auto timeout = timeoutFor("watch", path, want);
    if (!timeout) return timeout.error();
    if (auto r = refreshCredentials(); !r) return toError(r.error());
    ++requests_;

    std::string lastRv = opts.resourceVersion;
    std::optional<core::Error> failure;
    bool stopped = false;
    LineSplitter splitter;
    const LineSplitter::OnLine onLine = [&](std::string_view line) {
        auto ev = parseWatchEvent(line);
        if (!ev) {
            failure = makeError(Errc::Decode, "watch " + path + ": " + ev.error().message);
            return false;
        }
        if (ev->type == WatchEvent::Type::Error) {
            const json::Value* code = ev->object.find("code");
            const long status = code && code->asInt() ? static_cast<long>(*code->asInt()) : 500;
            auto err = mapStatus(status, ev->object.dump(), "watch", path, cfg_.identity);
            failure = err ? *err
                          : makeError(Errc::Internal, "watch " + path + ": ERROR event with " +
                                                          std::to_string(status));
            return false;
        }
        if (std::string rv = resourceVersionOf(ev->object); !rv.empty()) lastRv = std::move(rv);
        if (!onEvent(*ev)) {
            stopped = true;
            return false;
        }
        return true;
    };
    std::string errorBody;
    auto http = direct();
    if (!http) return toError(http.error());
    auto status = (*http)->stream(
        cfg_.server + full, *timeout,
        [&](std::string_view chunk) {
            auto r = splitter.feed(chunk, onLine);
            if (!r) {
                failure = makeError(Errc::Decode, "watch " + path + ": " + r.error().message);
                return false;
            }
            return *r;
        },
        &errorBody);
    lastRetryAfter_.reset();
    if (failure) return *failure;
    if (!status) return toError(status.error());
    if (*status == 401) tokenStale_ = true;
    if (auto err = mapStatus(*status, errorBody, "watch", path, cfg_.identity)) return *err;
    if (!stopped) {
        auto r = splitter.finish(onLine);
        if (failure) return *failure;
        if (!r) return makeError(Errc::Decode, "watch " + path + ": " + r.error().message);
    }
    return lastRv;
}

core::Result<Client> makeClient(const std::string& kubeconfigPath, Client::Options options) {
    auto cfg = kubeconfigPath.empty() ? inClusterConfig() : loadKubeconfig(kubeconfigPath);
    if (!cfg) return cfg.error();
    return Client::fromConfig(std::move(*cfg), std::move(options));
}

}  // namespace allot::k8s
