#include "node/pool_cache.h"

#include <unistd.h>

#include "json/json.h"
#include "node/files.h"
#include "store/pool_codec.h"

namespace allot::node {

namespace {

constexpr size_t kMaxCacheFile = 4u << 20;  // an IPPool is at most etcd's 1.5 MiB

class FileCache : public PoolCache {
  public:
    explicit FileCache(std::string dir) : dir_(std::move(dir)) {}

    std::optional<store::Pool> load(const std::string& ns, const std::string& pool) override {
        auto text = readSmall(path(ns, pool), kMaxCacheFile);
        if (!text) return std::nullopt;
        auto v = json::parse(*text);
        if (!v) return std::nullopt;
        auto p = store::decodePool(*v);
        if (!p || p->name != pool || p->resourceVersion.empty()) return std::nullopt;
        return *p;
    }
    void save(const std::string& ns, const store::Pool& pool) override {
        // A stale file only costs a Conflict.
        if (makeDirs(dir_, 0700))
            (void)writeAtomic(path(ns, pool.name), store::encodePool(pool, "").dump());
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

}  // namespace allot::node
