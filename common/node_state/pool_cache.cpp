#include "node_state/pool_cache.h"

#include <unistd.h>

#include <charconv>
#include <string_view>

#include "json/json.h"
#include "node_state/files.h"
#include "store/pool_codec.h"

namespace allot::node_state {

using engine::PoolCache;

namespace {

constexpr size_t kMaxCacheFile = 4u << 20;  // an IPPool is at most etcd's 1.5 MiB

// A cache file: a header line, "allot-pool-cache 2 <resourceVersion> <overhead>", then the
// object as last written (Pool::written, whose own resourceVersion is the one it replaced) or
// as read. A file in another form (an older allot's) is not read: the pool is read again.
constexpr std::string_view kHeader = "allot-pool-cache 2 ";

class FileCache : public PoolCache {
  public:
    explicit FileCache(std::string dir) : dir_(std::move(dir)) {}

    std::optional<store::Pool> load(const std::string& ns, const std::string& pool) override {
        auto text = readSmall(path(ns, pool), kMaxCacheFile);
        if (!text || text->compare(0, kHeader.size(), kHeader) != 0) return std::nullopt;
        const size_t eol = text->find('\n');
        if (eol == std::string::npos) return std::nullopt;
        const std::string_view header =
            std::string_view(*text).substr(kHeader.size(), eol - kHeader.size());
        const size_t space = header.find(' ');
        size_t overhead = 0;
        if (space == 0 || space == std::string_view::npos) return std::nullopt;
        const std::string rv(header.substr(0, space));
        const char* end = header.data() + header.size();
        auto [at, ec] = std::from_chars(header.data() + space + 1, end, overhead);
        if (ec != std::errc() || at != end) return std::nullopt;
        store::PoolStreamDecoder decoder;  // entries decoded as parsed
        auto v = json::parse(std::string_view(*text).substr(eol + 1), decoder.taps());
        if (!v) return std::nullopt;
        auto p = decoder.finish(*v);
        if (!p || p->name != pool) return std::nullopt;
        p->resourceVersion = rv;
        p->stored.overhead = overhead;
        p->stored.bytes += overhead;
        return std::move(*p);
    }
    void save(const std::string& ns, const store::Pool& pool) override {
        // A stale file only costs a Conflict.
        if (pool.resourceVersion.empty() || !makeDirs(dir_, 0700)) return;
        std::string text = std::string(kHeader) + pool.resourceVersion + " " +
                           std::to_string(pool.stored.overhead) + "\n";
        text += pool.written.empty() ? store::encodePool(pool, "").dump() : pool.written;
        // A copy left older than this node's own last write would hide that write's entries
        // from whoever trusts the copy (an ADD or DEL choosing a slice's part): none, then.
        if (!writeAtomic(path(ns, pool.name), text)) ::unlink(path(ns, pool.name).c_str());
    }
    void drop(const std::string& ns, const std::string& pool) override {
        ::unlink(path(ns, pool).c_str());
    }

  private:
    // A namespace is a DNS label (no '.'), so "<ns>.<pool>" names one pool.
    std::string path(const std::string& ns, const std::string& pool) const {
        return dir_ + "/" + poolFileName(ns + "." + pool) + ".cache";
    }
    std::string dir_;
};

}  // namespace

std::unique_ptr<PoolCache> makeFileCache(const std::string& dir) {
    return std::make_unique<FileCache>(dir);
}

}  // namespace allot::node_state
