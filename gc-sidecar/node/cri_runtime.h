#pragma once
// What the node's container runtime says of a pod sandbox: CRI (runtime.v1, gRPC on the
// runtime's unix socket: containerd's /run/containerd/containerd.sock, CRI-O's
// /var/run/crio/crio.sock) RuntimeService/PodSandboxStatus, as the reclaimer's proof that a
// sandbox is gone (core/release_rule.h). Only a clear answer counts: whatever allot cannot read
// is Unknown, which keeps the address.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/release_rule.h"
#include "core/result.h"
#include "k8s/grpc_channel.h"

namespace allot::gc {

// What the node's container runtime says of sandboxes. An interface, so the reclaimer's tests
// use a fake.
class SandboxRuntime {
  public:
    virtual ~SandboxRuntime() = default;
    // Thread-safe: called from several threads at once.
    virtual core::RuntimeAnswer sandboxState(const std::string& sandboxId,
                                             std::string* detail = nullptr) = 0;
};

// CRI over one unix socket. Each call is bounded by the timeout given to open(); calls are
// serialized (one CURL handle; the runtime is local and answers in milliseconds).
class CriRuntime : public SandboxRuntime {
  public:
    // `socketPath`: an absolute path, or "unix:///path" (kubelet's --container-runtime-endpoint
    // form). Nothing is connected yet: a runtime that is down makes each call Unknown until it
    // is up. InvalidConfig for another scheme, a relative or too long path, or a timeout <= 0;
    // Internal when libcurl cannot be loaded or lacks HTTP/2 or unix sockets.
    static core::Result<std::unique_ptr<CriRuntime>> open(const std::string& socketPath,
                                                          std::chrono::milliseconds timeout);

    // Ready (SANDBOX_READY), NotReady (SANDBOX_NOTREADY) or NotFound (gRPC NOT_FOUND) as the
    // runtime says. Unknown, with *detail saying why, for anything else: a malformed sandbox ID
    // (nothing is sent), no socket, refused, timed out, another gRPC status (UNIMPLEMENTED: no
    // runtime.v1; UNAVAILABLE, ...), an answer that cannot be read or has no status, or one
    // about another sandbox (containerd and CRI-O resolve a unique prefix of an ID). *detail
    // is also set (the runtime's message, if any) for NotFound; cleared otherwise.
    core::RuntimeAnswer sandboxState(const std::string& sandboxId,
                                     std::string* detail = nullptr) override;

    // "containerd 1.6.20 (CRI v1)": RuntimeService/Version, for the log. Transient when the
    // runtime cannot be reached or answers an error; Unsupported when it does not serve
    // runtime.v1 (UNIMPLEMENTED); Decode for an answer that cannot be read.
    core::Result<std::string> version();

    const std::string& socketPath() const { return socketPath_; }

  private:
    CriRuntime(std::string socketPath, k8s::GrpcChannel channel, std::chrono::milliseconds timeout);
    core::Result<k8s::GrpcReply, k8s::TransportError> call(std::string_view method,
                                                           std::string_view request);

    const std::string socketPath_;
    const std::chrono::milliseconds timeout_;
    std::mutex mu_;
    k8s::GrpcChannel channel_;  // guarded by mu_
};

// The CRI messages allot reads and writes, as protobuf wire bytes (runtime.v1 api.proto), pure
// and exposed for tests. Decoders skip fields they do not know and never read past the input.

// PodSandboxStatusRequest{pod_sandbox_id = 1: id, verbose = 2: false (proto3: not sent)}.
std::string encodeSandboxStatusRequest(std::string_view sandboxId);

struct SandboxStatus {
    std::string id;                                          // PodSandboxStatus.id (field 1)
    core::RuntimeAnswer state = core::RuntimeAnswer::Ready;  // .state (field 3): Ready or NotReady
};
// PodSandboxStatusResponse{status = 1: PodSandboxStatus{id = 1, state = 3}}. A state absent on
// the wire is SANDBOX_READY (0, proto3's default). Decode for malformed bytes, a response
// without status, or a state other than READY (0) and NOTREADY (1).
core::Result<SandboxStatus> decodeSandboxStatusResponse(std::string_view payload);

// VersionRequest{version = 1: apiVersion}.
std::string encodeVersionRequest(std::string_view apiVersion);

struct RuntimeVersion {
    std::string version, runtimeName, runtimeVersion, runtimeApiVersion;  // fields 1 to 4
};
// VersionResponse. Decode for malformed bytes.
core::Result<RuntimeVersion> decodeVersionResponse(std::string_view payload);

// "unix:///run/x.sock" or "/run/x.sock" -> "/run/x.sock"; InvalidConfig for anything else.
core::Result<std::string> criSocketPath(std::string_view endpoint);

}  // namespace allot::gc
