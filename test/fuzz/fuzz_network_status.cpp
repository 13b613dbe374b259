// The network-status annotation of a deleted pod (anyone who can annotate a pod writes it):
// a parse yields entries within the limits, or a Decode error whose message is one short,
// printable line (it goes to the log and into an Event). Every entry a release would follow
// names a NetworkAttachmentDefinition as a valid namespace and object name (they go into a
// request path), and what was parsed survives a round trip through JSON unchanged.
#include <cstdlib>
#include <string>
#include <string_view>

#include "gc-sidecar/node/network_status.h"
#include "json/json.h"

using namespace allot;

namespace {

constexpr size_t kMaxMessage = 1024;

void require(bool ok) {
    if (!ok) std::abort();
}

// One line of printable text (UTF-8 above 0x7f is fine; control bytes are not).
void cleanMessage(const core::Error& e) {
    require(!e.message.empty() && e.message.size() <= kMaxMessage);
    for (unsigned char c : e.message) require(c >= 0x20 && c != 0x7f);
}

bool dnsLabel(const std::string& s) {
    if (s.empty() || s.size() > 63) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return s.front() != '-' && s.back() != '-';
}

bool dnsSubdomain(const std::string& s) {
    if (s.empty() || s.size() > 253) return false;
    size_t start = 0;
    while (true) {
        size_t dot = s.find('.', start);
        std::string label = s.substr(start, dot == std::string::npos ? dot : dot - start);
        if (!dnsLabel(label)) return false;
        if (dot == std::string::npos) return true;
        start = dot + 1;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto r = gc::parseNetworkStatus(text);
    if (!r) {
        require(r.code() == core::Errc::Decode);
        cleanMessage(r.error());
        return 0;
    }
    require(text.size() <= gc::kMaxNetworkStatusBytes);
    require(r->size() <= gc::kMaxNetworkStatusEntries);

    json::Value again = json::Value::array();
    for (const auto& s : *r) {
        require(!s.name.empty());
        // Decoding never makes text longer (escapes shrink), and every IP took at least
        // two bytes ("::") plus its quotes.
        require(s.name.size() <= text.size() && s.interface.size() <= text.size());
        require(s.ips.size() * 4 <= text.size());
        for (const auto& ip : s.ips) {
            auto back = core::IpAddress::parse(ip.str());
            require(back.ok() && *back == ip);
        }
        json::Value e = json::Value::object();
        e.set("name", json::Value::string(s.name));
        e.set("interface", json::Value::string(s.interface));
        e.set("default", json::Value::boolean(s.isDefault));
        json::Value ips = json::Value::array();
        for (const auto& ip : s.ips) ips.push(json::Value::string(ip.str()));
        e.set("ips", std::move(ips));
        again.push(std::move(e));

        // The NetworkAttachmentDefinition a release reads (the default network is skipped
        // before this is asked).
        if (s.isDefault) continue;
        auto nad = gc::nadOf(s, "pod-ns");
        if (!nad) {
            require(nad.code() == core::Errc::Decode);
            cleanMessage(nad.error());
        } else {
            require(dnsLabel(nad->first) && dnsSubdomain(nad->second));
            if (s.name.find('/') == std::string::npos)
                require(nad->first == "pod-ns" && nad->second == s.name);
            else
                require(nad->first + "/" + nad->second == s.name);
        }
        // Without the pod's namespace a bare name names nothing.
        auto noNs = gc::nadOf(s, "");
        if (s.name.find('/') == std::string::npos) require(!noNs.ok());
        if (!noNs) cleanMessage(noNs.error());
    }

    const std::string dumped = again.dump();
    if (dumped.size() > gc::kMaxNetworkStatusBytes) return 0;  // the defaults written out
    auto round = gc::parseNetworkStatus(dumped);
    require(round.ok() && round->size() == r->size());
    for (size_t i = 0; i < r->size(); ++i) {
        const auto &a = (*r)[i], &b = (*round)[i];
        require(a.name == b.name && a.interface == b.interface && a.isDefault == b.isDefault &&
                a.ips == b.ips);
    }
    return 0;
}
