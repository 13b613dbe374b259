#pragma once
// A copy of one resource that allot-gc keeps current: the node relay's (slice_watch.h,
// claim_copy.h) and the controller's sets (cluster/watched.h). List, then watch from the list's
// resourceVersion, resuming after the server ends a watch and listing again after a failure,
// with the engine's backoff between failures. A list is read a page at a time and each object
// is handed over as it is decoded: what is held is what the copy keeps, never the list. A copy
// that failed answers nothing until the next list: the plugin then asks the API server.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gc-sidecar/base/stop.h"
#include "json/json.h"
#include "k8s/client.h"
#include "k8s/watch.h"

namespace allot::gc {

// (metadata.namespace, metadata.name) of an object; empty strings where it has none.
std::pair<std::string, std::string> objectKey(const json::Value& obj);

class WatchedCopy {
  public:
    virtual ~WatchedCopy() = default;
    // A full list, streamed: listBegin(), listAdd() per object, then listCommit(). A list
    // starts from nothing (a copy is relisted only after it was lost, or at the start): the
    // copy answers nothing until listCommit(), and is current from then on. A list that fails
    // midway is never committed.
    virtual void listBegin() = 0;
    virtual void listAdd(const json::Value& obj) = 0;
    virtual void listCommit() = 0;
    // A full list at hand, the same way.
    void replace(const std::vector<json::Value>& objects) {
        listBegin();
        for (const auto& o : objects) listAdd(o);
        listCommit();
    }
    // One watch event on top of the last list.
    virtual void apply(const k8s::WatchEvent& ev) = 0;
    // The watch failed: answer nothing until the next replace().
    virtual void lost() = 0;
    // The cluster does not serve the resource (an optional CRD); listed again later.
    virtual void notServed() {}
};

// A WatchedCopy that keeps one string per object, by namespace and name: what keep() makes of
// it. Until the first list, and from a failed watch until the next list, it holds nothing.
class KeyedCopy : public WatchedCopy {
  public:
    void listBegin() override;
    void listAdd(const json::Value& obj) override;
    void listCommit() override;
    void apply(const k8s::WatchEvent& ev) override;
    void lost() override;
    size_t size() const;

  protected:
    // What to keep of an object; nullopt: nothing (what was kept for it goes).
    virtual std::optional<std::string> keep(const json::Value& obj) const = 0;
    struct Lookup {
        bool synced = false;
        std::optional<std::string> kept;
    };
    Lookup lookup(const std::string& ns, const std::string& name) const;

  private:
    void set(const json::Value& obj);  // under mu_

    mutable std::mutex mu_;
    bool synced_ = false;
    std::map<std::pair<std::string, std::string>, std::string> kept_;
};

inline constexpr std::chrono::minutes kNotServedRecheck{5};
// Objects per list page: one page's text is held while its objects are handed over.
inline constexpr int64_t kListPageSize = 100;

class ObjectWatch {
  public:
    // `collection`: the resource's path in all namespaces; `what` names it in logs.
    ObjectWatch(k8s::Client client, std::string collection, std::string what, WatchedCopy& copy,
                StopSignal& stop);
    // Runs until stopped.
    void run();
    // The resource may be served now (its CRD was seen): a watch that found it not served
    // lists it again at once rather than at its next recheck.
    void recheck();

  private:
    bool relist(std::string& rv);
    bool watchFrom(std::string& rv);  // false: list again
    void pause();
    bool notServed_ = false;  // the last list said the resource is not served

    k8s::Client client_;
    std::string collection_, what_;
    WatchedCopy& copy_;
    StopSignal& stop_;
    int failures_ = 0;
    bool saidNotServed_ = false;
    std::mutex wakeMu_;
    std::condition_variable wakeCv_;
    bool wake_ = false;  // recheck() or stop: end a not-served wait
};

}  // namespace allot::gc
