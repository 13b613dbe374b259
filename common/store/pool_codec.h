#pragma once
// IPPool and OverlappingRangeIPReservation objects <-> store types, in Whereabouts' exact
// wire format plus allot's optional fields ("node", "poduid", "network"), and the size policy
// that keeps a pool object under the API server's limit.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "json/json.h"
#include "store/pool_store.h"

namespace allot::store {

inline constexpr const char* kGroupVersion = "whereabouts.cni.cncf.io/v1alpha1";
// Pool::released as an annotation of the IPPool: {"keep":S,"at":{"<offset>":<unix s>,...}}.
// Metadata survives any CRD schema and a Whereabouts write (it updates the object it read).
// Unreadable: treated as no recent releases, and rewritten on allot's next write.
inline constexpr const char* kReleasedAnnotation = "allot.cni.cncf.io/released";
// The IPAMClaim (or sticky StatefulSet) owner of each claim-owned entry, as
// {"<offset>":{"id":"<container ID>","claim":"<owner>"}}: the entry's `ipamclaim` field again,
// where a CRD schema cannot prune it (Whereabouts' own drops every entry field but id, podref
// and ifname). It applies to an entry only while that entry holds the same container ID (a
// writer that knows nothing of it, such as Whereabouts, may free and reuse the offset).
// Unreadable: ignored, and rewritten on allot's next write.
inline constexpr const char* kClaimsAnnotation = "allot.cni.cncf.io/claims";
// Pool::sealed (node slices): the seal token as a string; absent when not sealed.
inline constexpr const char* kSealedAnnotation = "allot.cni.cncf.io/slice-sealed";

// metadata.resourceVersion of an object; "" when it has none.
std::string resourceVersionOf(const json::Value& obj);

// Decodes an IPPool object. Invalid (naming the field) when the object, its metadata, spec,
// spec.range or spec.allocations cannot be read. An entry that cannot be read (no id or an
// empty one, a field that is not a string, a key that is not a canonical decimal offset, an
// offset seen twice) does not fail the pool: it goes to Pool::undecoded with the reason.
// Fields and members allot does not know are kept (Pool::unknownFields, Pool::other).
Result<Pool> decodePool(const json::Value& obj);
// Decodes the IPPools of a list as it is parsed (k8s::Client::listEach's item taps), so that
// a pool of many entries is never held as a JSON tree: each entry of spec.allocations is
// decoded as soon as it is parsed, metadata.managedFields only measured. finish() then takes
// the rest of the object; the Pool equals decodePool's of the whole object (an object the API
// server sends has no duplicate keys: a second spec.allocations member would add to the
// first's entries here, where decodePool keeps only the last).
class PoolStreamDecoder {
  public:
    // Paths from the IPPool object; they refer to this decoder.
    std::vector<json::Tap> taps();
    // As decodePool, over what the taps left of the object; ready for the next object then.
    Result<Pool> finish(const json::Value& rest);

  private:
    Pool pool_;
    std::vector<std::pair<core::u128, std::string>> claims_;  // undecoded entries' offsets
    std::optional<size_t> managedFieldsBytes_;
};

// The pool a write stored, from the API server's answer to the PUT of `sentText` (`sent`
// encoded): sent's spec and entries, which the server stored as sent, with the answer's
// metadata (the new resourceVersion, what the server set, managedFields measured). The
// answer's spec is skipped as it is parsed, not built and decoded again: on a pool of many
// entries that was most of a write's cost. A server that prunes fields it does not know (a
// CRD without allot's schema) stores less than was sent: this pool then still holds them, and
// a later read shows what was kept. The result's `written` is sentText.
struct PoolSize;

class PoolWriteDecoder {
  public:
    std::vector<json::Tap> taps();
    // `size`: sent's, as fitPool measured it for the write.
    Result<Pool> finish(Pool sent, std::string sentText, const PoolSize& size,
                        const json::Value& answer);

  private:
    std::optional<size_t> managedFieldsBytes_;
};

// Encodes a full IPPool object (metadata.name/namespace/resourceVersion, spec): every entry
// of `allocations` except the placeholders of undecoded entries, which are written verbatim,
// with the unknown fields of each entry still held by the owner they were read with.
json::Value encodePool(const Pool& pool, const std::string& ns);

// The size policy (SizePolicy, pool_store.h). A pool object is written whole, and etcd refuses a
// request over 1.5 MiB by default, which is what bounds a pool in plain mode. allot's optional
// fields cost about 80 bytes an entry on top of Whereabouts' ~120, so they are kept only while the
// pool is small: every entry keeps them while the object is under `freeBytes`; past it, only while
// the object costs at most `ratioTenths`/10 of the same entries in Whereabouts' form
// (dropped highest offset first: in a filling pool, the newest entries). Past `maxBytes` not
// even that: the pool is full when its entries in Whereabouts' form do not fit.
struct PoolSize {
    size_t bytes = 0;             // encodePool(pool, ns).dump().size()
    size_t whereaboutsBytes = 0;  // the same with no entry carrying node, poduid or network
    size_t entries = 0;           // entries written (decoded and undecoded)
};
// Computed without encoding the entries.
PoolSize poolSize(const Pool& pool, const std::string& ns);

struct Fitted {
    PoolSize size;
    size_t estimatedStored = 0;  // size plus what the server adds (managedFields), estimated
    size_t stripped = 0;         // entries whose optional fields were dropped by this call
};
// Applies the policy to `pool` before a write: drops optional fields as it says, and the
// unknown fields of entries whose owner changed. TooLarge
// ("... is full ...", naming the pool, the sizes and the limit) when the object would still be
// over maxBytes and larger than it was when read (a write that shrinks a pool already over
// the limit is allowed: releases must always go through). Internal when an undecoded entry's
// offset holds something other than its placeholder (its verbatim entry would hide it).
Result<Fitted> fitPool(Pool& pool, const std::string& ns, const SizePolicy& policy = {});

// Why `pool` cannot take one more entry, even with every optional field dropped: its entries
// in Whereabouts' form, one more of their average size and what the server adds would pass
// policy.maxBytes (fitPool would refuse the ADD). nullopt while there is room. For allot-gc's
// repair pass, which reports it (pool_object_full) so the operator sees it before a pod does.
std::optional<std::string> cannotGrow(const Pool& pool, const std::string& ns,
                                      const SizePolicy& policy = {});

// True when the owner is the placeholder of an undecoded entry (an Owner{}; allot never
// writes an entry without a container ID).
inline bool isPlaceholder(const core::Owner& o) {
    return o == core::Owner{};
}

Result<Reservation> decodeReservation(const json::Value& obj);
json::Value encodeReservation(const Reservation& r, const std::string& ns);

}  // namespace allot::store
