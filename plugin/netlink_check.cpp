#include "plugin/netlink_check.h"

#include <fcntl.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/fd.h"

namespace allot::plugin {

using core::Errc;
using core::makeError;

namespace {

struct Sock {
    nl_sock* s = nl_socket_alloc();
    ~Sock() {
        if (s) nl_socket_free(s);
    }
};

}  // namespace

core::Result<void> checkInterfaceAddresses(const std::string& netnsPath, const std::string& ifName,
                                           const std::vector<engine::IpResult>& ips) {
    // Our own namespace, to return to: held until the end of the call.
    sys::Fd self(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    {
        sys::Fd fd(::open(netnsPath.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd)
            return makeError(Errc::NotFound,
                             "network namespace " + netnsPath + ": " + std::strerror(errno));
        if (::setns(fd.get(), CLONE_NEWNET) != 0) {
            int err = errno;
            return makeError(Errc::Internal,
                             "enter network namespace " + netnsPath + ": " + std::strerror(err));
        }
    }

    auto result = [&]() -> core::Result<void> {
        Sock sock;
        if (!sock.s || nl_connect(sock.s, NETLINK_ROUTE) < 0)
            return makeError(Errc::Internal, "netlink connect failed");
        rtnl_link* link = nullptr;
        if (rtnl_link_get_kernel(sock.s, 0, ifName.c_str(), &link) < 0 || !link)
            return makeError(Errc::NotFound,
                             "interface " + ifName + " does not exist in " + netnsPath);
        int index = rtnl_link_get_ifindex(link);
        rtnl_link_put(link);
        nl_cache* cache = nullptr;
        if (rtnl_addr_alloc_cache(sock.s, &cache) < 0)
            return makeError(Errc::Internal, "netlink: cannot list addresses");
        std::vector<core::IpAddress> have;
        for (nl_object* o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
            auto* a = reinterpret_cast<rtnl_addr*>(o);
            if (rtnl_addr_get_ifindex(a) != index) continue;
            nl_addr* local = rtnl_addr_get_local(a);
            if (!local) continue;
            char buf[INET6_ADDRSTRLEN + 8] = {};
            nl_addr2str(local, buf, sizeof buf);
            std::string text(buf);
            if (auto ip = core::IpAddress::parse(text.substr(0, text.find('/'))))
                have.push_back(*ip);
        }
        nl_cache_free(cache);
        for (const auto& want : ips) {
            bool found = false;
            for (const auto& h : have) found = found || h == want.ip;
            if (!found)
                return makeError(Errc::NotFound, "interface " + ifName + " in " + netnsPath +
                                                     " does not carry " + want.ip.str());
        }
        return {};
    }();

    if (self) (void)::setns(self.get(), CLONE_NEWNET);
    return result;
}

}  // namespace allot::plugin
