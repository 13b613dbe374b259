#include "k8s/status.h"

#include <string>

#include "json/json.h"

namespace allot::k8s {

using core::Errc;

namespace {

constexpr size_t kMaxQuotedBody = 200;

// A short, printable rendition of a body that is not a Status (an HTML error page from a proxy,
// plain text from the server).
std::string summarize(std::string_view body) {
    std::string out;
    for (char c : body.substr(0, kMaxQuotedBody)) {
        const auto u = static_cast<unsigned char>(c);
        out.push_back(u < 0x20 || u == 0x7f ? ' ' : c);
    }
    if (body.size() > kMaxQuotedBody) out += "...";
    const auto b = out.find_first_not_of(' ');
    return b == std::string::npos ? std::string() : out.substr(b);
}

struct StatusInfo {
    std::string reason;
    std::string message;
};

StatusInfo decodeStatus(std::string_view body) {
    StatusInfo info;
    if (body.empty()) return info;
    auto v = json::parse(body, json::ParseLimits{1u << 20, 32});
    if (!v || !v->isObject()) {
        info.message = summarize(body);
        return info;
    }
    if (auto r = v->getString("reason"); r && *r) info.reason = **r;
    if (auto m = v->getString("message"); m && *m) info.message = **m;
    return info;
}

}  // namespace

std::optional<core::Error> mapStatus(long status, std::string_view body, std::string_view verb,
                                     std::string_view path, std::string_view identity,
                                     std::optional<int> retryAfterSeconds) {
    if (status >= 200 && status < 300) return std::nullopt;
    const StatusInfo info = decodeStatus(body);
    const std::string_view bare = path.substr(0, path.find('?'));
    std::string head = std::string(verb) + " " + std::string(bare);
    auto detail = [&](std::string_view label) {
        std::string m = head + ": " + std::string(label);
        if (!info.message.empty()) m += ": " + info.message;
        return m;
    };

    switch (status) {
        case 401:
            return core::makeError(Errc::Unauthorized,
                                   head + " as " + std::string(identity) +
                                       ": Unauthorized (token or client certificate expired or "
                                       "invalid?)");
        case 403:
            return core::makeError(Errc::Forbidden,
                                   head + " as " + std::string(identity) + ": Forbidden" +
                                       (info.message.empty() ? "" : ": " + info.message));
        case 404:
            return core::makeError(Errc::NotFound, detail("not found"));
        case 409:
            if (info.reason == "AlreadyExists")
                return core::makeError(Errc::AlreadyExists, detail("already exists"));
            return core::makeError(Errc::Conflict, detail("conflict"));
        case 410:
            return core::makeError(Errc::Expired, detail("gone (resourceVersion expired)"));
        case 422:
            return core::makeError(Errc::Invalid, detail("invalid"));
        default:
            break;
    }
    // etcd refuses objects over its request limit (1.5 MiB by default) with a 500; retrying
    // cannot help, so it is not transient.
    if (status >= 500 && info.message.find("request is too large") != std::string::npos)
        return core::makeError(Errc::TooLarge, detail("object too large for etcd"));
    // 408 is not in the API server's vocabulary, but proxies in front of it send it.
    if (status == 408 || status == 429 || (status >= 500 && status <= 599)) {
        std::string m = detail("HTTP " + std::to_string(status) +
                               (info.reason.empty() ? "" : " " + info.reason));
        if (retryAfterSeconds) m += " (retry after " + std::to_string(*retryAfterSeconds) + "s)";
        return core::makeError(Errc::Transient, std::move(m));
    }
    return core::makeError(Errc::Internal, detail("unexpected HTTP " + std::to_string(status) +
                                                  (info.reason.empty() ? "" : " " + info.reason)));
}

}  // namespace allot::k8s
