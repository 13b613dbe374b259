#include "gc-sidecar/node/cri_runtime.h"

// The few runtime.v1 messages allot needs, encoded and decoded by hand from api.proto (the
// field numbers below are the published API's; nothing is generated): a protobuf library for
// four fields would be the largest dependency of allot-gc.

#include <cstdint>

namespace allot::gc {

using core::Errc;
using core::makeError;
using core::Result;
using core::RuntimeAnswer;

namespace {

constexpr std::string_view kSandboxStatusMethod = "/runtime.v1.RuntimeService/PodSandboxStatus";
constexpr std::string_view kVersionMethod = "/runtime.v1.RuntimeService/Version";
constexpr std::string_view kUnixScheme = "unix://";
constexpr size_t kMaxSocketPath = 107;  // sockaddr_un's sun_path, with its NUL
constexpr size_t kMaxSandboxId = 256;   // containerd's and CRI-O's are 64 hex digits

// Protobuf wire types (https://protobuf.dev/programming-guides/encoding/); groups (3, 4) are
// not used by CRI and end decoding.
enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// One field of a message: its number, wire type and value.
struct Field {
    uint64_t number = 0;
    uint8_t type = 0;
    uint64_t varint = 0;     // kVarint
    std::string_view bytes;  // kBytes, kFixed64, kFixed32
};

// The fields of one message in turn, never reading past it.
class WireReader {
  public:
    explicit WireReader(std::string_view in) : in_(in) {}
    // The next field: true; false at the end, or on malformed input (then error() says why).
    bool next(Field& f);
    const std::string& error() const { return error_; }

  private:
    bool varint(uint64_t& v);
    bool take(uint64_t n, std::string_view& out);
    std::string_view in_;
    std::string error_;
};

bool WireReader::varint(uint64_t& v) {
    v = 0;
    for (int i = 0; i < 10; ++i) {
        if (in_.empty()) break;
        const auto b = static_cast<uint8_t>(in_.front());
        in_.remove_prefix(1);
        if (i == 9 && b > 1) break;  // past 64 bits
        v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) return true;
    }
    error_ = "a truncated or overlong varint";
    return false;
}

bool WireReader::take(uint64_t n, std::string_view& out) {
    if (n > in_.size()) {
        error_ = "a field longer than its message";
        return false;
    }
    out = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
}

bool WireReader::next(Field& f) {
    if (in_.empty() || !error_.empty()) return false;
    uint64_t key = 0;
    if (!varint(key)) return false;
    f = Field{};
    f.number = key >> 3;
    f.type = static_cast<uint8_t>(key & 7);
    if (f.number == 0 || f.number > (1u << 29) - 1) {
        error_ = "field number " + std::to_string(f.number);
        return false;
    }
    uint64_t len = 0;
    switch (f.type) {
        case kVarint:
            return varint(f.varint);
        case kFixed64:
            return take(8, f.bytes);
        case kFixed32:
            return take(4, f.bytes);
        case kBytes:
            return varint(len) && take(len, f.bytes);
        default:
            error_ =
                "wire type " + std::to_string(f.type) + " (field " + std::to_string(f.number) + ")";
            return false;
    }
}

void putVarint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

// A string field; proto3 sends none for "".
void putString(std::string& out, uint32_t number, std::string_view s) {
    if (s.empty()) return;
    putVarint(out, uint64_t{number} << 3 | kBytes);
    putVarint(out, s.size());
    out.append(s);
}

core::Error malformed(std::string_view message, std::string_view why) {
    return makeError(Errc::Decode, "unreadable " + std::string(message) + ": " + std::string(why));
}

// PodSandboxStatus{id = 1, state = 3} into *id and *state, the last value of each winning, as
// protobuf merges.
Result<void> readSandboxStatus(std::string_view msg, std::string& id, uint64_t& state) {
    WireReader r(msg);
    for (Field f; r.next(f);) {
        if (f.number == 1) {
            if (f.type != kBytes) return malformed("PodSandboxStatus", "id is not a string");
            id.assign(f.bytes);
        } else if (f.number == 3) {
            if (f.type != kVarint) return malformed("PodSandboxStatus", "state is not an enum");
            state = f.varint;
        }
    }
    if (!r.error().empty()) return malformed("PodSandboxStatus", r.error());
    return {};
}

// Printable ASCII only, at most `max` characters: what a runtime sends ends up in the log.
std::string printable(std::string_view s, size_t max = 128) {
    std::string out;
    for (char c : s.substr(0, max)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    return out;
}

bool validSandboxId(std::string_view id) {
    if (id.empty() || id.size() > kMaxSandboxId) return false;
    for (char c : id)
        if (c <= 0x20 || c >= 0x7f) return false;
    return true;
}

// What a PodSandboxStatus call for `id` says, and why when it is Unknown or NotFound.
RuntimeAnswer answerOf(const Result<k8s::GrpcReply, k8s::TransportError>& r, const std::string& id,
                       std::string& why) {
    if (!r) {
        why = r.error().message;
        return RuntimeAnswer::Unknown;
    }
    if (r->status != k8s::grpc_code::kOk) {
        why = "the runtime answered " + k8s::grpcCodeName(r->status) +
              (r->message.empty() ? "" : ": " + printable(r->message, 512));
        return r->status == k8s::grpc_code::kNotFound ? RuntimeAnswer::NotFound
                                                      : RuntimeAnswer::Unknown;
    }
    auto status = decodeSandboxStatusResponse(r->payload);
    if (!status) {
        why = status.error().message;
        return RuntimeAnswer::Unknown;
    }
    if (!status->id.empty() && status->id != id) {
        why = "the runtime answered for another sandbox, " + printable(status->id);
        return RuntimeAnswer::Unknown;
    }
    return status->state;
}

}  // namespace

std::string encodeSandboxStatusRequest(std::string_view sandboxId) {
    std::string out;
    putString(out, 1, sandboxId);
    return out;
}

Result<SandboxStatus> decodeSandboxStatusResponse(std::string_view payload) {
    constexpr std::string_view kWhat = "PodSandboxStatusResponse";
    bool haveStatus = false;
    std::string id;
    uint64_t state = 0;  // SANDBOX_READY: what an absent field means
    WireReader r(payload);
    for (Field f; r.next(f);) {
        if (f.number != 1) continue;
        if (f.type != kBytes) return malformed(kWhat, "status is not a message");
        haveStatus = true;
        if (auto s = readSandboxStatus(f.bytes, id, state); !s) return s.error();
    }
    if (!r.error().empty()) return malformed(kWhat, r.error());
    if (!haveStatus) return malformed(kWhat, "no status");
    SandboxStatus out;
    out.id = std::move(id);
    if (state == 0) {
        out.state = RuntimeAnswer::Ready;
    } else if (state == 1) {
        out.state = RuntimeAnswer::NotReady;
    } else {
        return malformed(kWhat, "sandbox state " + std::to_string(state));
    }
    return out;
}

std::string encodeVersionRequest(std::string_view apiVersion) {
    std::string out;
    putString(out, 1, apiVersion);
    return out;
}

Result<RuntimeVersion> decodeVersionResponse(std::string_view payload) {
    RuntimeVersion v;
    std::string* fields[] = {&v.version, &v.runtimeName, &v.runtimeVersion, &v.runtimeApiVersion};
    WireReader r(payload);
    for (Field f; r.next(f);) {
        if (f.number < 1 || f.number > 4) continue;
        if (f.type != kBytes)
            return malformed("VersionResponse",
                             "field " + std::to_string(f.number) + " is not a string");
        fields[f.number - 1]->assign(f.bytes);
    }
    if (!r.error().empty()) return malformed("VersionResponse", r.error());
    return v;
}

Result<std::string> criSocketPath(std::string_view endpoint) {
    std::string_view path = endpoint;
    if (path.substr(0, kUnixScheme.size()) == kUnixScheme) path.remove_prefix(kUnixScheme.size());
    if (path.empty() || path.front() != '/' || path.size() > kMaxSocketPath ||
        path.find('\0') != std::string_view::npos)
        return makeError(Errc::InvalidConfig,
                         "container runtime endpoint '" + printable(endpoint, 200) +
                             "': want an absolute unix socket path of at most " +
                             std::to_string(kMaxSocketPath) + " bytes, or unix:///path");
    return std::string(path);
}

CriRuntime::CriRuntime(std::string socketPath, k8s::GrpcChannel channel,
                       std::chrono::milliseconds timeout)
    : socketPath_(std::move(socketPath)), timeout_(timeout), channel_(std::move(channel)) {}

Result<std::unique_ptr<CriRuntime>> CriRuntime::open(const std::string& socketPath,
                                                     std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0)
        return makeError(Errc::InvalidConfig, "container runtime timeout must be > 0");
    auto path = criSocketPath(socketPath);
    if (!path) return path.error();
    auto channel = k8s::GrpcChannel::create(*path);
    if (!channel)
        return makeError(Errc::Internal,
                         "cannot talk to the container runtime: " + channel.error().message);
    return std::unique_ptr<CriRuntime>(
        new CriRuntime(std::move(*path), std::move(*channel), timeout));
}

Result<k8s::GrpcReply, k8s::TransportError> CriRuntime::call(std::string_view method,
                                                             std::string_view request) {
    std::lock_guard<std::mutex> lock(mu_);
    return channel_.unary(method, request, timeout_);
}

RuntimeAnswer CriRuntime::sandboxState(const std::string& sandboxId, std::string* detail) {
    std::string why;
    RuntimeAnswer a = RuntimeAnswer::Unknown;
    if (!validSandboxId(sandboxId)) {
        why = "'" + printable(sandboxId, 80) + "' is not a sandbox ID (1 to " +
              std::to_string(kMaxSandboxId) + " printable characters): not asked";
    } else {
        a = answerOf(call(kSandboxStatusMethod, encodeSandboxStatusRequest(sandboxId)), sandboxId,
                     why);
    }
    if (detail) *detail = std::move(why);
    return a;
}

Result<std::string> CriRuntime::version() {
    auto r = call(kVersionMethod, encodeVersionRequest("v1"));
    if (!r) {
        const bool ours = r.error().kind == k8s::TransportError::Kind::Internal ||
                          r.error().kind == k8s::TransportError::Kind::LocalConfig;
        return makeError(ours ? Errc::Internal : Errc::Transient, r.error().message);
    }
    const std::string said = r->message.empty() ? "" : ": " + printable(r->message, 512);
    if (r->status == k8s::grpc_code::kUnimplemented)
        return makeError(Errc::Unsupported, "the container runtime on " + socketPath_ +
                                                " does not serve CRI runtime.v1" + said);
    if (r->status != k8s::grpc_code::kOk)
        return makeError(Errc::Transient, "the container runtime on " + socketPath_ + " answered " +
                                              k8s::grpcCodeName(r->status) + said);
    auto v = decodeVersionResponse(r->payload);
    if (!v) return v.error();
    return printable(v->runtimeName) + " " + printable(v->runtimeVersion) + " (CRI " +
           printable(v->runtimeApiVersion) + ")";
}

}  // namespace allot::gc
