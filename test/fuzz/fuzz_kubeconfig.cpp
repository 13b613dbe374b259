// kubeconfig YAML: loading yields a config or an InvalidConfig error, never an exception.
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "k8s/kubeconfig.h"

using namespace allot;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
    static std::string path = "/tmp/allot-fuzz-kubeconfig-" + std::to_string(::getpid());
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    auto c = k8s::loadKubeconfig(path);
    if (c) {
        if (c->server.empty()) std::abort();
    } else if (c.code() != core::Errc::InvalidConfig || c.error().message.empty()) {
        std::abort();
    }
    return 0;
}
