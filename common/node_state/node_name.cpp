#include "node_state/node_name.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <vector>

namespace allot::node_state {

namespace {

std::string firstLine(const std::string& path) {
    std::ifstream in(path);
    if (!in) return "";
    char buf[1025] = {};
    in.read(buf, 1024);
    std::string s(buf, static_cast<size_t>(in.gcount()));
    auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

std::string dirOf(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path;
    auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

std::string lookupNodeName(const std::string& envNodeName, const std::string& flatFile,
                           const std::string& configurationPath) {
    auto trim = [](const std::string& s) {
        auto b = s.find_first_not_of(" \t\r\n");
        if (b == std::string::npos) return std::string();
        return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
    };
    if (auto n = trim(envNodeName); !n.empty()) return n;
    std::vector<std::string> files;
    if (!configurationPath.empty()) files.push_back(dirOf(configurationPath) + "/nodename");
    if (!flatFile.empty()) files.push_back(dirOf(flatFile) + "/nodename");
    files.push_back("/etc/cni/net.d/allot.d/nodename");
    files.push_back("/etc/cni/net.d/whereabouts.d/nodename");
    for (const auto& f : files)
        if (auto n = firstLine(f); !n.empty()) return n;
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) == 0) return host;
    return "";
}

}  // namespace allot::node_state
