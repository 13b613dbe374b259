#include "cluster/pod_index.h"

#include <functional>
#include <string_view>

namespace allot::cluster {

namespace {

constexpr std::array<std::string_view, 6> kPhases = {"",          "Pending", "Running",
                                                     "Succeeded", "Failed",  "Unknown"};
constexpr uint8_t kUnknownPhase = 5;

uint8_t phaseCode(const std::string& phase) {
    for (size_t i = 0; i < kPhases.size(); ++i)
        if (kPhases[i] == phase) return static_cast<uint8_t>(i);
    return kUnknownPhase;
}

int hexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

bool dashAt(size_t i) {
    return i == 8 || i == 13 || i == 18 || i == 23;
}

// A UID as the API server makes them (a lowercase UUID), as 16 bytes; nullopt for any other.
std::optional<std::array<uint8_t, 16>> packUuid(const std::string& s) {
    if (s.size() != 36) return std::nullopt;
    std::array<uint8_t, 16> out{};
    size_t byte = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (dashAt(i)) {
            if (s[i] != '-') return std::nullopt;
            continue;
        }
        const int hi = hexValue(s[i]);
        const int lo = i + 1 < s.size() ? hexValue(s[i + 1]) : -1;
        if (hi < 0 || lo < 0 || dashAt(i + 1)) return std::nullopt;
        out[byte++] = static_cast<uint8_t>(hi << 4 | lo);
        ++i;
    }
    return out;
}

std::string unpackUuid(const std::array<uint8_t, 16>& b) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s;
    s.reserve(36);
    for (size_t i = 0; i < b.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        s += kHex[b[i] >> 4];
        s += kHex[b[i] & 0xf];
    }
    return s;
}

}  // namespace

uint64_t PodIndex::hashOf(const std::string& ns, const std::string& name) {
    std::string ref;
    ref.reserve(ns.size() + 1 + name.size());
    ref.append(ns).append(1, '/').append(name);
    return std::hash<std::string_view>{}(ref);
}

uint32_t PodIndex::nodeId(const std::string& name) {
    if (name.empty()) return 0;
    auto [it, added] = nodeIds_.try_emplace(name, static_cast<uint32_t>(nodeNames_.size()));
    if (added) nodeNames_.push_back(name);
    return it->second;
}

void PodIndex::dropAside(uint64_t h) {
    uidAside_.erase(h);
    mirrorOf_.erase(h);
}

void PodIndex::beginList() {
    std::lock_guard l(mu_);
    synced_ = false;
    pods_.clear();
    uidAside_.clear();
    mirrorOf_.clear();
}

bool PodIndex::set(const Key& key, const PodInfo& pod) {
    const uint64_t h = hashOf(key.first, key.second);
    std::lock_guard l(mu_);
    if (auto it = pods_.find(h); it != pods_.end() && unpack(h, it->second) == pod) return false;
    dropAside(h);
    Packed p;
    if (auto uid = packUuid(pod.uid)) {
        p.uid = *uid;
    } else {
        p.flags |= kUidAside;
        uidAside_[h] = pod.uid;
    }
    if (!pod.mirrorOf.empty()) {
        p.flags |= kMirror;
        mirrorOf_[h] = pod.mirrorOf;
    }
    p.node = nodeId(pod.nodeName);
    p.phase = phaseCode(pod.phase);
    pods_[h] = p;
    return true;
}

bool PodIndex::erase(const Key& key) {
    const uint64_t h = hashOf(key.first, key.second);
    std::lock_guard l(mu_);
    dropAside(h);
    return pods_.erase(h) != 0;
}

void PodIndex::listed() {
    std::lock_guard l(mu_);
    synced_ = true;
}

void PodIndex::lost() {
    beginList();
}

bool PodIndex::synced() const {
    std::lock_guard l(mu_);
    return synced_;
}

size_t PodIndex::size() const {
    std::lock_guard l(mu_);
    return pods_.size();
}

PodInfo PodIndex::unpack(uint64_t h, const Packed& p) const {
    PodInfo out;
    if (p.flags & kUidAside) {
        auto it = uidAside_.find(h);
        if (it != uidAside_.end()) out.uid = it->second;
    } else {
        out.uid = unpackUuid(p.uid);
    }
    if (p.flags & kMirror) {
        auto it = mirrorOf_.find(h);
        if (it != mirrorOf_.end()) out.mirrorOf = it->second;
    }
    out.phase = std::string(kPhases[p.phase < kPhases.size() ? p.phase : kUnknownPhase]);
    out.nodeName = p.node < nodeNames_.size() ? nodeNames_[p.node] : std::string();
    return out;
}

core::Result<std::optional<PodInfo>> PodIndex::find(const std::string& ns,
                                                    const std::string& name) const {
    const uint64_t h = hashOf(ns, name);
    std::lock_guard l(mu_);
    if (!synced_)
        return core::makeError(core::Errc::Transient,
                               "Pods are not listed yet (their watch is starting)");
    auto it = pods_.find(h);
    if (it == pods_.end()) return std::optional<PodInfo>();
    return std::optional<PodInfo>(unpack(h, it->second));
}

}  // namespace allot::cluster
