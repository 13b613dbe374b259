#include "k8s/transport.h"

#include "k8s/grpc_channel.h"

// Two builds of this file, one interface:
// - allot-gc and the tests load libcurl with dlopen the first time an HttpClient is created,
//   not linked: Debian's libcurl pulls in ~30 shared libraries, and mapping them would cost
//   every exec even when nothing talks to the API server.
// - The plugin (ALLOT_CURL_LINKED, see meson.build) is one static executable with a static
//   libcurl and OpenSSL inside: it is copied onto nodes whose OS may have no libcurl.so.4 and
//   an older glibc. Nothing is loaded at run time, and the lazy part that remains is
//   curl_global_init (OpenSSL's set-up) on first use.
// Either way every call goes through the Curl table below.
#include <curl/curl.h>
#if ALLOT_CURL_LINKED
#include <nss.h>
#include <unistd.h>
#else
#include <dlfcn.h>
#endif

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <mutex>
#include <string>
#include <type_traits>

namespace allot::k8s {

using core::Result;
using Kind = TransportError::Kind;

namespace {

constexpr size_t kMaxResponseBytes = 128u << 20;
constexpr size_t kMaxErrorBodyBytes = 64u << 10;
constexpr std::chrono::milliseconds kMaxConnectTimeout{15000};

// The libcurl functions this file uses: linked in, or resolved from libcurl.so.4 (never
// unloaded).
struct Curl {
    CURLcode (*global_init)(long flags);
    CURL* (*easy_init)();
    void (*easy_cleanup)(CURL*);
    CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
    CURLcode (*easy_perform)(CURL*);
    const char* (*easy_strerror)(CURLcode);
    curl_slist* (*slist_append)(curl_slist*, const char*);
    void (*slist_free_all)(curl_slist*);
};

Curl g_curl{};

#if ALLOT_CURL_LINKED
// The static binary's glibc would dlopen the node's NSS modules for any "hosts:" source other
// than files and dns (Fedora's and Ubuntu's resolve, myhostname, mdns4_minimal): modules
// built for another glibc, which a static program cannot load safely. An API server's name
// needs only /etc/hosts and DNS, and /etc/resolv.conf still decides the DNS servers (the
// stub resolver of systemd-resolved included), so both built-in sources are used alone.
void useBuiltinResolvers() {
    __nss_configure_lookup("hosts", "files dns");
}

// With no CA in the kubeconfig, libcurl falls back on a compiled-in bundle path, which is
// Debian's and not every node's; this static build has none, so the node's bundle is found
// here, at the paths the major distributions use.
const char* systemCaBundle() {
    static const char* const kBundles[] = {
        "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Alpine, Arch
        "/etc/pki/tls/certs/ca-bundle.crt",                   // RHEL, Fedora, Amazon Linux
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL 9, Fedora (the source)
        "/etc/ssl/ca-bundle.pem",                             // openSUSE, SLES
        "/etc/ssl/cert.pem",                                  // Alpine, Flatcar
    };
    for (const char* path : kBundles)
        if (access(path, R_OK) == 0) return path;
    return nullptr;
}

// Runs curl_global_init, once per process. Empty on success, otherwise why libcurl is
// unusable (the same message for every later call).
const std::string& loadCurl() {
    static std::once_flag once;
    static std::string error;
    std::call_once(once, [] {
        useBuiltinResolvers();
        const Curl c{curl_global_init,   curl_easy_init,    curl_easy_cleanup,
                     curl_easy_setopt,   curl_easy_getinfo, curl_easy_perform,
                     curl_easy_strerror, curl_slist_append, curl_slist_free_all};
        if (const CURLcode rc = c.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
            error = std::string("curl_global_init failed: ") + c.easy_strerror(rc);
            return;
        }
        g_curl = c;  // published to other threads by call_once
    });
    return error;
}
#else
constexpr const char* kCurlLibrary = "libcurl.so.4";

// Loads libcurl and runs curl_global_init, once per process. Empty on success, otherwise why
// libcurl is unusable (the same message for every later call).
const std::string& loadCurl() {
    static std::once_flag once;
    static std::string error;
    std::call_once(once, [] {
        void* lib = dlopen(kCurlLibrary, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* why = dlerror();
            error =
                std::string("cannot load ") + kCurlLibrary + ": " + (why ? why : "unknown error");
            return;
        }
        Curl c{};
        auto resolve = [&](auto& fn, const char* name) {
            if (!error.empty()) return;
            dlerror();
            void* sym = dlsym(lib, name);
            if (!sym) {
                const char* why = dlerror();
                error = std::string("cannot load ") + kCurlLibrary + ": " +
                        (why ? why : std::string(name) + " not found");
                return;
            }
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)> >(sym);
        };
        resolve(c.global_init, "curl_global_init");
        resolve(c.easy_init, "curl_easy_init");
        resolve(c.easy_cleanup, "curl_easy_cleanup");
        resolve(c.easy_setopt, "curl_easy_setopt");
        resolve(c.easy_getinfo, "curl_easy_getinfo");
        resolve(c.easy_perform, "curl_easy_perform");
        resolve(c.easy_strerror, "curl_easy_strerror");
        resolve(c.slist_append, "curl_slist_append");
        resolve(c.slist_free_all, "curl_slist_free_all");
        if (!error.empty()) {
            dlclose(lib);
            return;
        }
        if (const CURLcode rc = c.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
            error = std::string("curl_global_init failed: ") + c.easy_strerror(rc);
            return;  // keep the library mapped: it may have started initialising
        }
        g_curl = c;  // published to other threads by call_once
    });
    return error;
}
#endif

// Only reached through an HttpClient, which exists only after loadCurl() succeeded.
const Curl& curl() {
    return g_curl;
}

bool iequalsPrefix(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(s[i])) !=
            std::tolower(static_cast<unsigned char>(prefix[i])))
            return false;
    }
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// What kind of transport failure a curl code is.
Kind kindOf(CURLcode rc) {
    switch (rc) {
        // Local configuration rather than the network or the server.
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CACERT_BADFILE:
        // The server's certificate does not verify against the configured CA (wrong CA or wrong
        // server): retrying until the deadline cannot help.
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_ENGINE_NOTFOUND:
        case CURLE_SSL_ENGINE_SETFAILED:
        case CURLE_NOT_BUILT_IN:
        case CURLE_BAD_FUNCTION_ARGUMENT:
            return Kind::LocalConfig;
        case CURLE_OPERATION_TIMEDOUT:
            return Kind::Timeout;
        case CURLE_SSL_CONNECT_ERROR:
            return Kind::Tls;
        case CURLE_WEIRD_SERVER_REPLY:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_BAD_CONTENT_ENCODING:
            return Kind::Protocol;
        default:  // refused, unresolvable, reset, nothing received, ...
            return Kind::Connect;
    }
}

TransportError failed(Kind kind, std::string message) {
    return TransportError{kind, std::move(message)};
}

// Header callback state: only Retry-After is of interest.
struct HeaderState {
    std::optional<int> retryAfter;
};

size_t onHeader(char* data, size_t size, size_t count, void* user) {
    auto* st = static_cast<HeaderState*>(user);
    const size_t n = size * count;
    std::string_view line(data, n);
    if (iequalsPrefix(line, "HTTP/")) {
        st->retryAfter.reset();  // a new response (after 100-continue or similar)
    } else if (iequalsPrefix(line, "retry-after:")) {
        auto v = trim(line.substr(12));
        int secs = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), secs);
        // HTTP-date values are not used by the API server; ignore anything but seconds.
        if (ec == std::errc() && p == v.data() + v.size() && secs >= 0) st->retryAfter = secs;
    }
    return n;
}

struct BodyState {
    std::string* out;
    size_t limit = kMaxResponseBytes;
    bool tooLarge = false;
};

size_t onBody(char* data, size_t size, size_t count, void* user) {
    auto* st = static_cast<BodyState*>(user);
    const size_t n = size * count;
    if (st->out->size() + n > st->limit) {
        st->tooLarge = true;
        return 0;
    }
    st->out->append(data, n);
    return n;
}

struct StreamState {
    CURL* handle;
    const std::function<bool(std::string_view)>* onData;
    std::string* errorBody;
    bool aborted = false;
};

size_t onStreamBody(char* data, size_t size, size_t count, void* user) {
    auto* st = static_cast<StreamState*>(user);
    const size_t n = size * count;
    long status = 0;
    curl().easy_getinfo(st->handle, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
        if (!(*st->onData)(std::string_view(data, n))) {
            st->aborted = true;
            return 0;
        }
        return n;
    }
    if (st->errorBody && st->errorBody->size() < kMaxErrorBodyBytes) {
        st->errorBody->append(data, std::min(n, kMaxErrorBodyBytes - st->errorBody->size()));
    }
    return n;
}

struct SList {
    curl_slist* list = nullptr;
    ~SList() { curl().slist_free_all(list); }
    bool add(const std::string& h) {
        curl_slist* next = curl().slist_append(list, h.c_str());
        if (!next) return false;
        list = next;
        return true;
    }
};

}  // namespace

// The one owner of a CURL handle and its error buffer: HttpClient's and GrpcChannel's.
struct EasyHandle {
    CURL* h = nullptr;
    char errbuf[CURL_ERROR_SIZE] = {};

    EasyHandle() = default;
    EasyHandle(const EasyHandle&) = delete;
    EasyHandle& operator=(const EasyHandle&) = delete;
    ~EasyHandle() {
        if (h) curl().easy_cleanup(h);
    }
};

struct HttpClient::Impl : EasyHandle {
    std::string authHeader;

    Result<void, TransportError> configure(const TlsConfig& tls, const std::string& userAgent);
    Result<void, TransportError> prepare(std::string_view method, const std::string& url,
                                         std::string_view body, std::string_view contentType,
                                         std::chrono::milliseconds timeout, SList& headers,
                                         std::string& methodStore, std::string_view accept);
    TransportError failure(CURLcode rc, std::string_view method, const std::string& url) const;
};

Result<void, TransportError> HttpClient::Impl::configure(const TlsConfig& tls,
                                                         const std::string& userAgent) {
    CURLcode rc = CURLE_OK;
    auto set = [&](CURLoption opt, auto value) {
        if (rc == CURLE_OK) rc = curl().easy_setopt(h, opt, value);
    };
    set(CURLOPT_ERRORBUFFER, errbuf);
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_USERAGENT, userAgent.c_str());
    set(CURLOPT_TCP_KEEPALIVE, 1L);
    set(CURLOPT_FOLLOWLOCATION, 0L);
    set(CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode; big lists compress well
#if LIBCURL_VERSION_NUM >= 0x075500
    set(CURLOPT_PROTOCOLS_STR, "https,http");
#else
    set(CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTPS | CURLPROTO_HTTP));
#endif
    if (rc != CURLE_OK)
        return failed(Kind::Internal,
                      "curl setup failed: " + std::string(curl().easy_strerror(rc)));
    // HTTP/2 only where libcurl was built with it; otherwise HTTP/1.1 keep-alive.
    (void)curl().easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));

    set(CURLOPT_SSL_VERIFYPEER, tls.insecureSkipVerify ? 0L : 1L);
    set(CURLOPT_SSL_VERIFYHOST, tls.insecureSkipVerify ? 0L : 2L);
    auto blob = [](const std::string& pem) {
        curl_blob b{};
        b.data = const_cast<char*>(pem.data());
        b.len = pem.size();
        b.flags = CURL_BLOB_COPY;
        return b;
    };
    if (!tls.caData.empty()) {
        curl_blob b = blob(tls.caData);
        set(CURLOPT_CAINFO_BLOB, &b);
    } else if (!tls.caFile.empty()) {
        set(CURLOPT_CAINFO, tls.caFile.c_str());
    }
#if ALLOT_CURL_LINKED
    else if (const char* bundle = systemCaBundle()) {
        set(CURLOPT_CAINFO, bundle);
    }
#endif
    if (rc != CURLE_OK)
        return failed(Kind::LocalConfig, "cannot use the cluster CA certificate: " +
                                             std::string(curl().easy_strerror(rc)));
    if (!tls.clientCertData.empty()) {
        curl_blob b = blob(tls.clientCertData);
        set(CURLOPT_SSLCERT_BLOB, &b);
    } else if (!tls.clientCertFile.empty()) {
        set(CURLOPT_SSLCERT, tls.clientCertFile.c_str());
    }
    if (!tls.clientKeyData.empty()) {
        curl_blob b = blob(tls.clientKeyData);
        set(CURLOPT_SSLKEY_BLOB, &b);
    } else if (!tls.clientKeyFile.empty()) {
        set(CURLOPT_SSLKEY, tls.clientKeyFile.c_str());
    }
    if (rc != CURLE_OK)
        return failed(Kind::LocalConfig, "cannot use the client certificate or key: " +
                                             std::string(curl().easy_strerror(rc)));
    return {};
}

Result<void, TransportError> HttpClient::Impl::prepare(
    std::string_view method, const std::string& url, std::string_view body,
    std::string_view contentType, std::chrono::milliseconds timeout, SList& headers,
    std::string& methodStore, std::string_view accept) {
    errbuf[0] = '\0';
    bool ok = headers.add("Accept: " + std::string(accept.empty() ? "application/json" : accept)) &&
              headers.add("Expect:");
    if (!contentType.empty()) ok = ok && headers.add("Content-Type: " + std::string(contentType));
    if (!authHeader.empty()) ok = ok && headers.add(authHeader);
    if (!ok) return failed(Kind::Internal, "out of memory building request headers");

    CURLcode rc = CURLE_OK;
    auto set = [&](CURLoption opt, auto value) {
        if (rc == CURLE_OK) rc = curl().easy_setopt(h, opt, value);
    };
    set(CURLOPT_URL, url.c_str());
    set(CURLOPT_HTTPHEADER, headers.list);
    methodStore.assign(method);
    const bool sendsBody =
        !body.empty() || method == "POST" || method == "PUT" || method == "PATCH";
    if (sendsBody) {
        set(CURLOPT_POST, 1L);
        set(CURLOPT_POSTFIELDS, body.empty() ? "" : body.data());
        set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    } else {
        set(CURLOPT_HTTPGET, 1L);
    }
    set(CURLOPT_CUSTOMREQUEST,
        method == (sendsBody ? "POST" : "GET") ? nullptr : methodStore.c_str());
    const long total = static_cast<long>(timeout.count());
    set(CURLOPT_TIMEOUT_MS, total);
    const auto connect =
        timeout.count() > 0 ? std::min(timeout, kMaxConnectTimeout) : kMaxConnectTimeout;
    set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect.count()));
    if (rc != CURLE_OK)
        return failed(Kind::Internal, std::string(method) + " " + url +
                                          ": curl setup failed: " + curl().easy_strerror(rc));
    return {};
}

TransportError HttpClient::Impl::failure(CURLcode rc, std::string_view method,
                                         const std::string& url) const {
    std::string msg = std::string(method) + " " + url + ": " + curl().easy_strerror(rc);
    if (errbuf[0] != '\0') msg += std::string(" (") + errbuf + ")";
    return failed(kindOf(rc), std::move(msg));
}

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::HttpClient(HttpClient&&) noexcept = default;
HttpClient& HttpClient::operator=(HttpClient&&) noexcept = default;
HttpClient::~HttpClient() = default;

Result<HttpClient, TransportError> HttpClient::create(const TlsConfig& tls,
                                                      const std::string& userAgent) {
    if (const std::string& why = loadCurl(); !why.empty()) return failed(Kind::Internal, why);
    auto impl = std::make_unique<Impl>();
    impl->h = curl().easy_init();
    if (!impl->h) return failed(Kind::Internal, "curl_easy_init failed");
    if (auto r = impl->configure(tls, userAgent); !r) return r.error();
    return HttpClient(std::move(impl));
}

void HttpClient::setBearerToken(const std::string& token) {
    auto t = trim(token);
    // A control character would let the token inject headers; send no token instead, so the
    // server answers 401 and the caller sees which credentials are wrong.
    const bool clean = std::none_of(t.begin(), t.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    impl_->authHeader =
        (t.empty() || !clean) ? std::string() : "Authorization: Bearer " + std::string(t);
}

Result<HttpResponse, TransportError> HttpClient::send(std::string_view method,
                                                      const std::string& url, std::string_view body,
                                                      std::string_view contentType,
                                                      std::chrono::milliseconds timeout,
                                                      std::string_view accept) {
    if (timeout.count() <= 0)
        return failed(Kind::Timeout, std::string(method) + " " + url + ": no time left");
    SList headers;
    std::string methodStore;
    if (auto r =
            impl_->prepare(method, url, body, contentType, timeout, headers, methodStore, accept);
        !r)
        return r.error();
    HttpResponse resp;
    HeaderState hs;
    BodyState bs{&resp.body};
    curl().easy_setopt(impl_->h, CURLOPT_HEADERFUNCTION, onHeader);
    curl().easy_setopt(impl_->h, CURLOPT_HEADERDATA, &hs);
    curl().easy_setopt(impl_->h, CURLOPT_WRITEFUNCTION, onBody);
    curl().easy_setopt(impl_->h, CURLOPT_WRITEDATA, &bs);
    const CURLcode rc = curl().easy_perform(impl_->h);
    curl().easy_setopt(impl_->h, CURLOPT_HTTPHEADER, nullptr);
    if (bs.tooLarge)
        return failed(Kind::Internal, std::string(method) + " " + url + ": response larger than " +
                                          std::to_string(kMaxResponseBytes >> 20) + " MiB");
    curl().easy_getinfo(impl_->h, CURLINFO_RESPONSE_CODE, &resp.status);
    resp.retryAfterSeconds = hs.retryAfter;
    // A server may answer 4xx (401, 403, 413) before it has read the body and close the
    // stream; curl then reports a send error although the answer is final. A 4xx means the
    // request was not applied, so it is the answer, not a transient failure to retry.
    if (rc != CURLE_OK && !(resp.status >= 400 && resp.status < 500))
        return impl_->failure(rc, method, url);
    return resp;
}

Result<long, TransportError> HttpClient::stream(
    const std::string& url, std::chrono::milliseconds timeout,
    const std::function<bool(std::string_view chunk)>& onData, std::string* errorBody) {
    if (timeout.count() < 0) return failed(Kind::Timeout, "GET " + url + ": no time left");
    SList headers;
    std::string methodStore;
    if (auto r = impl_->prepare("GET", url, {}, {}, timeout, headers, methodStore, {}); !r)
        return r.error();
    HeaderState hs;
    StreamState ss{impl_->h, &onData, errorBody};
    curl().easy_setopt(impl_->h, CURLOPT_HEADERFUNCTION, onHeader);
    curl().easy_setopt(impl_->h, CURLOPT_HEADERDATA, &hs);
    curl().easy_setopt(impl_->h, CURLOPT_WRITEFUNCTION, onStreamBody);
    curl().easy_setopt(impl_->h, CURLOPT_WRITEDATA, &ss);
    const CURLcode rc = curl().easy_perform(impl_->h);
    curl().easy_setopt(impl_->h, CURLOPT_HTTPHEADER, nullptr);
    long status = 0;
    curl().easy_getinfo(impl_->h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && ss.aborted))
        return impl_->failure(rc, "GET", url);
    return status;
}

// ------------------------------------------------------------------------------ gRPC --
//
// gRPC over HTTP/2 (grpc/doc/PROTOCOL-HTTP2.md): a POST of one length-prefixed message to
// /package.Service/Method; the answer is length-prefixed messages, then grpc-status and
// grpc-message in the trailers (libcurl hands HTTP/2 trailers to the header callback), or in
// the headers alone when the server answers with no message (Trailers-Only).

namespace {

constexpr size_t kMaxGrpcResponseBytes = 4u << 20;  // gRPC's own default receive limit
constexpr size_t kMaxGrpcMessageChars = 1024;
constexpr size_t kMaxGrpcMethodChars = 256;
constexpr size_t kMaxUnixSocketPath = 107;  // sockaddr_un's sun_path, with its NUL
constexpr size_t kGrpcFrameHeader = 5;      // compressed flag, 4-byte big-endian length

struct GrpcHeaderState {
    std::optional<std::string> status;  // grpc-status, as sent
    std::string message;                // grpc-message, percent-encoded
};

size_t onGrpcHeader(char* data, size_t size, size_t count, void* user) {
    auto* st = static_cast<GrpcHeaderState*>(user);
    const size_t n = size * count;
    std::string_view line(data, n);
    if (iequalsPrefix(line, "HTTP/")) {
        *st = GrpcHeaderState{};
    } else if (iequalsPrefix(line, "grpc-status:")) {
        st->status = std::string(trim(line.substr(12)).substr(0, 16));
    } else if (iequalsPrefix(line, "grpc-message:")) {
        st->message = std::string(trim(line.substr(13)).substr(0, 3 * kMaxGrpcMessageChars));
    }
    return n;
}

// "/package.Service/Method": a URL path of name characters only.
bool validGrpcMethod(std::string_view method) {
    if (method.size() < 2 || method.size() > kMaxGrpcMethodChars || method.front() != '/')
        return false;
    return std::all_of(method.begin(), method.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '/' ||
               c == '-';
    });
}

std::string grpcFrame(std::string_view message) {
    const auto len = static_cast<uint32_t>(message.size());
    std::string out;
    out.reserve(kGrpcFrameHeader + message.size());
    out.push_back('\0');  // not compressed
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(len >> shift));
    out.append(message);
    return out;
}

// grpc-message is percent-encoded (PROTOCOL-HTTP2.md); a malformed escape is kept as sent.
std::string percentDecode(std::string_view s) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    for (size_t i = 0; i < s.size() && out.size() < kMaxGrpcMessageChars; ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
            i += 2;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

// The first message of a response body, unframed; empty with `why` set when there is none.
std::optional<std::string> firstGrpcMessage(std::string_view body, std::string& why) {
    if (body.size() < kGrpcFrameHeader) {
        why = body.empty() ? "status OK without a message" : "truncated message header";
        return std::nullopt;
    }
    if (body[0] != '\0') {
        why = "a compressed message (none was accepted)";
        return std::nullopt;
    }
    uint32_t len = 0;
    for (size_t i = 1; i < kGrpcFrameHeader; ++i)
        len = len << 8 | static_cast<unsigned char>(body[i]);
    if (len > body.size() - kGrpcFrameHeader) {
        why = "truncated message (" + std::to_string(body.size() - kGrpcFrameHeader) + " of " +
              std::to_string(len) + " bytes)";
        return std::nullopt;
    }
    return std::string(body.substr(kGrpcFrameHeader, len));
}

// The call's answer from what the callbacks collected (the exchange itself succeeded).
Result<GrpcReply, TransportError> grpcReply(const GrpcHeaderState& hs, std::string_view body,
                                            long httpStatus, const std::string& what) {
    if (!hs.status)
        return failed(Kind::Protocol,
                      what + ": HTTP " + std::to_string(httpStatus) + " without grpc-status");
    int code = -1;
    const std::string& v = *hs.status;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), code);
    if (ec != std::errc() || p != v.data() + v.size() || code < 0)
        return failed(Kind::Protocol, what + ": unreadable grpc-status '" + v + "'");
    GrpcReply reply;
    reply.status = code;
    reply.message = percentDecode(hs.message);
    if (code != grpc_code::kOk) return reply;
    std::string why;
    auto message = firstGrpcMessage(body, why);
    if (!message) return failed(Kind::Protocol, what + ": " + why);
    reply.payload = std::move(*message);
    return reply;
}

}  // namespace

std::string grpcCodeName(int code) {
    static const char* const kNames[] = {"OK",
                                         "CANCELLED",
                                         "UNKNOWN",
                                         "INVALID_ARGUMENT",
                                         "DEADLINE_EXCEEDED",
                                         "NOT_FOUND",
                                         "ALREADY_EXISTS",
                                         "PERMISSION_DENIED",
                                         "RESOURCE_EXHAUSTED",
                                         "FAILED_PRECONDITION",
                                         "ABORTED",
                                         "OUT_OF_RANGE",
                                         "UNIMPLEMENTED",
                                         "INTERNAL",
                                         "UNAVAILABLE",
                                         "DATA_LOSS",
                                         "UNAUTHENTICATED"};
    if (code >= 0 && code < static_cast<int>(std::size(kNames))) return kNames[code];
    return "code " + std::to_string(code);
}

struct GrpcChannel::Impl : EasyHandle {
    std::string socketPath;

    Result<void, TransportError> configure();
    Result<void, TransportError> prepare(const std::string& url, const std::string& framed,
                                         std::chrono::milliseconds timeout, SList& headers);
    std::string where(std::string_view method) const {
        return "gRPC " + std::string(method) + " on " + socketPath;
    }
};

Result<void, TransportError> GrpcChannel::Impl::configure() {
    CURLcode rc = CURLE_OK;
    auto set = [&](CURLoption opt, auto value) {
        if (rc == CURLE_OK) rc = curl().easy_setopt(h, opt, value);
    };
    set(CURLOPT_ERRORBUFFER, errbuf);
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_USERAGENT, "allot");
    set(CURLOPT_FOLLOWLOCATION, 0L);
    // A connection per call: libcurl before 7.89 (Debian 12's 7.88) fails every request after
    // the first on a reused prior-knowledge HTTP/2 connection, "Error in the HTTP2 framing
    // layer" (curl#10634). A local connect costs well under a millisecond.
    set(CURLOPT_FORBID_REUSE, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
    set(CURLOPT_PROTOCOLS_STR, "http");
#else
    set(CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP));
#endif
    if (rc != CURLE_OK)
        return failed(Kind::Internal,
                      "curl setup failed: " + std::string(curl().easy_strerror(rc)));
    // What a gRPC channel needs and a libcurl may be built without (the static plugin's is).
    set(CURLOPT_UNIX_SOCKET_PATH, socketPath.c_str());
    if (rc != CURLE_OK)
        return failed(Kind::LocalConfig, "this libcurl cannot use unix sockets: " +
                                             std::string(curl().easy_strerror(rc)));
    set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE));
    if (rc != CURLE_OK)
        return failed(Kind::LocalConfig,
                      "this libcurl has no HTTP/2: " + std::string(curl().easy_strerror(rc)));
    return {};
}

Result<void, TransportError> GrpcChannel::Impl::prepare(const std::string& url,
                                                        const std::string& framed,
                                                        std::chrono::milliseconds timeout,
                                                        SList& headers) {
    errbuf[0] = '\0';
    // grpc-timeout takes at most 8 digits; the server gives up when the client does.
    const long long ms = std::min<long long>(timeout.count(), 99999999);
    const bool ok = headers.add("Content-Type: application/grpc") && headers.add("TE: trailers") &&
                    headers.add("grpc-timeout: " + std::to_string(ms) + "m") &&
                    headers.add("Accept:") && headers.add("Expect:");
    if (!ok) return failed(Kind::Internal, "out of memory building request headers");
    CURLcode rc = CURLE_OK;
    auto set = [&](CURLoption opt, auto value) {
        if (rc == CURLE_OK) rc = curl().easy_setopt(h, opt, value);
    };
    set(CURLOPT_URL, url.c_str());
    set(CURLOPT_HTTPHEADER, headers.list);
    set(CURLOPT_POST, 1L);
    set(CURLOPT_POSTFIELDS, framed.data());
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(framed.size()));
    set(CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    set(CURLOPT_CONNECTTIMEOUT_MS,
        static_cast<long>(std::min(timeout, kMaxConnectTimeout).count()));
    if (rc != CURLE_OK)
        return failed(Kind::Internal,
                      "curl setup failed: " + std::string(curl().easy_strerror(rc)));
    return {};
}

GrpcChannel::GrpcChannel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrpcChannel::GrpcChannel(GrpcChannel&&) noexcept = default;
GrpcChannel& GrpcChannel::operator=(GrpcChannel&&) noexcept = default;
GrpcChannel::~GrpcChannel() = default;

Result<GrpcChannel, TransportError> GrpcChannel::create(std::string socketPath) {
    if (socketPath.empty() || socketPath.size() > kMaxUnixSocketPath ||
        socketPath.find('\0') != std::string::npos)
        return failed(Kind::LocalConfig, "'" + socketPath + "' is not a unix socket path (1 to " +
                                             std::to_string(kMaxUnixSocketPath) + " bytes)");
    if (const std::string& why = loadCurl(); !why.empty()) return failed(Kind::Internal, why);
    auto impl = std::make_unique<Impl>();
    impl->socketPath = std::move(socketPath);
    impl->h = curl().easy_init();
    if (!impl->h) return failed(Kind::Internal, "curl_easy_init failed");
    if (auto r = impl->configure(); !r) return r.error();
    return GrpcChannel(std::move(impl));
}

Result<GrpcReply, TransportError> GrpcChannel::unary(std::string_view method,
                                                     std::string_view message,
                                                     std::chrono::milliseconds timeout) {
    const std::string what = impl_->where(method);
    if (timeout.count() <= 0) return failed(Kind::Timeout, what + ": no time left");
    if (!validGrpcMethod(method)) return failed(Kind::LocalConfig, what + ": not a method name");
    const std::string url = "http://localhost" + std::string(method);
    const std::string framed = grpcFrame(message);
    SList headers;
    if (auto r = impl_->prepare(url, framed, timeout, headers); !r)
        return failed(r.error().kind, what + ": " + r.error().message);
    GrpcHeaderState hs;
    std::string body;
    BodyState bs{&body, kMaxGrpcResponseBytes};
    curl().easy_setopt(impl_->h, CURLOPT_HEADERFUNCTION, onGrpcHeader);
    curl().easy_setopt(impl_->h, CURLOPT_HEADERDATA, &hs);
    curl().easy_setopt(impl_->h, CURLOPT_WRITEFUNCTION, onBody);
    curl().easy_setopt(impl_->h, CURLOPT_WRITEDATA, &bs);
    const CURLcode rc = curl().easy_perform(impl_->h);
    curl().easy_setopt(impl_->h, CURLOPT_HTTPHEADER, nullptr);
    curl().easy_setopt(impl_->h, CURLOPT_POSTFIELDS, nullptr);
    if (bs.tooLarge)
        return failed(Kind::Internal, what + ": response larger than " +
                                          std::to_string(kMaxGrpcResponseBytes >> 20) + " MiB");
    if (rc != CURLE_OK) {
        std::string msg = what + ": " + curl().easy_strerror(rc);
        if (impl_->errbuf[0] != '\0') msg += std::string(" (") + impl_->errbuf + ")";
        return failed(kindOf(rc), std::move(msg));
    }
    long httpStatus = 0;
    curl().easy_getinfo(impl_->h, CURLINFO_RESPONSE_CODE, &httpStatus);
    return grpcReply(hs, body, httpStatus, what);
}

}  // namespace allot::k8s
