#include "gc-sidecar/leader/lease.h"

#include <algorithm>

#include "k8s_api/resources.h"
#include "k8s_api/timestamp.h"
#include "log/log.h"

namespace allot::gc {

using k8s::formatMicroTime;

using core::Errc;
using json::Value;

LeaseRecord leaseRecordOf(const Value& lease) {
    LeaseRecord r;
    const Value* spec = lease.find("spec");
    if (!spec || !spec->isObject()) return r;
    auto str = [&](const char* k) {
        const Value* v = spec->find(k);
        return v && v->isString() ? v->asString() : std::string();
    };
    auto num = [&](const char* k) -> int64_t {
        const Value* v = spec->find(k);
        return v && v->asInt() ? *v->asInt() : 0;
    };
    r.holder = str("holderIdentity");
    r.durationSeconds = num("leaseDurationSeconds");
    r.acquireTime = str("acquireTime");
    r.renewTime = str("renewTime");
    r.transitions = num("leaseTransitions");
    return r;
}

void setLeaseRecord(Value& lease, const LeaseRecord& r) {
    Value spec = Value::object();
    if (!r.holder.empty()) spec.set("holderIdentity", Value::string(r.holder));
    spec.set("leaseDurationSeconds", Value::number(r.durationSeconds));
    if (!r.acquireTime.empty()) spec.set("acquireTime", Value::string(r.acquireTime));
    if (!r.renewTime.empty()) spec.set("renewTime", Value::string(r.renewTime));
    spec.set("leaseTransitions", Value::number(r.transitions));
    lease.set("spec", std::move(spec));
}

bool mayAcquire(const LeaseRecord& r, const std::string& me,
                std::chrono::milliseconds sinceObserved) {
    if (r.holder.empty() || r.holder == me) return true;
    return sinceObserved >= std::chrono::seconds(std::max<int64_t>(r.durationSeconds, 1));
}

std::chrono::milliseconds firstSightAge(const LeaseRecord& r,
                                        std::chrono::system_clock::time_point wallNow,
                                        std::chrono::milliseconds renewInterval) {
    using std::chrono::milliseconds;
    const auto renewed = k8s::parseTime(r.renewTime);
    if (!renewed || *renewed >= wallNow) return milliseconds(0);
    const auto most = std::chrono::duration_cast<milliseconds>(
        std::chrono::seconds(std::max<int64_t>(r.durationSeconds, 1)) - renewInterval -
        std::chrono::seconds(1));
    const auto age = std::chrono::duration_cast<milliseconds>(wallNow - *renewed);
    return std::clamp(age, milliseconds(0), std::max(most, milliseconds(0)));
}

void LeaderElector::setLeading(bool v) {
    if (leading_.exchange(v) == v) return;
    logging::logInfo(std::string(v ? "became" : "is no longer") + " the repair leader (Lease " +
                     opts_.ns + "/" + opts_.name + ", identity " + opts_.identity + ")");
    if (onChange_) onChange_(v);
}

bool LeaderElector::tryAcquireOrRenew() {
    const auto now = Clock::now();
    const std::string stamp = formatMicroTime(std::chrono::system_clock::now());
    const int64_t durationSeconds = std::max<int64_t>(1, (opts_.duration.count() + 999) / 1000);
    const std::string path = k8s::objectPath(k8s::kLease, opts_.ns, opts_.name);
    // The whole attempt (GET and PUT) ends by the renew deadline while leading, so the leader
    // steps down before its Lease can run out; a candidate's attempt within one interval.
    const auto renewDeadline = opts_.duration - opts_.renewInterval;
    client_.setDeadline(leading_ ? lastRenew_ + renewDeadline : now + opts_.renewInterval);
    auto got = client_.get(path);
    if ((got || got.code() == Errc::NotFound) && onContact_) onContact_();
    if (!got) {
        if (got.code() != Errc::NotFound) {
            if (onApiError_) onApiError_(got.error());
            logging::logWarn("Lease " + opts_.ns + "/" + opts_.name + ": " + got.error().message);
            return false;
        }
        Value lease = Value::object();
        lease.set("apiVersion", Value::string("coordination.k8s.io/v1"));
        lease.set("kind", Value::string("Lease"));
        Value md = Value::object();
        md.set("name", Value::string(opts_.name));
        md.set("namespace", Value::string(opts_.ns));
        lease.set("metadata", std::move(md));
        LeaseRecord r{opts_.identity, durationSeconds, stamp, stamp, 0};
        setLeaseRecord(lease, r);
        auto made = client_.create(k8s::collectionPath(k8s::kLease, opts_.ns), lease);
        if (!made) {
            if (made.code() != Errc::AlreadyExists) {
                if (onApiError_) onApiError_(made.error());
                logging::logWarn("creating Lease " + opts_.ns + "/" + opts_.name + ": " +
                                 made.error().message);
            }
            return false;
        }
        lastLease_ = std::move(*made);
        observed_ = r;
        observedAt_ = now;
        lastRenew_ = now;
        return true;
    }
    LeaseRecord cur = leaseRecordOf(*got);
    if (!observed_ || !(*observed_ == cur)) {
        observed_ = cur;
        // The change happened after the previous poll: date it there (see lease.h).
        observedAt_ = lastGet_ ? std::max(*lastGet_, now - opts_.renewInterval)
                               : now - firstSightAge(cur, std::chrono::system_clock::now(),
                                                     opts_.renewInterval);
    }
    lastGet_ = now;
    if (!mayAcquire(cur, opts_.identity,
                    std::chrono::duration_cast<std::chrono::milliseconds>(now - observedAt_)))
        return false;
    LeaseRecord next = cur;
    if (cur.holder != opts_.identity) {
        next.acquireTime = stamp;
        next.transitions = cur.transitions + 1;
    }
    next.holder = opts_.identity;
    next.durationSeconds = durationSeconds;
    next.renewTime = stamp;
    Value lease = std::move(*got);
    setLeaseRecord(lease, next);
    auto put = client_.replace(path, lease);  // metadata.resourceVersion is the one just read
    if (!put) {
        if (put.code() != Errc::Conflict) {
            if (onApiError_) onApiError_(put.error());
            logging::logWarn("updating Lease " + opts_.ns + "/" + opts_.name + ": " +
                             put.error().message);
        }
        return false;
    }
    lastLease_ = std::move(*put);
    observed_ = next;
    observedAt_ = now;
    lastRenew_ = now;
    return true;
}

void LeaderElector::release() {
    if (!leading_ || !lastLease_.isObject()) return;
    LeaseRecord r = leaseRecordOf(lastLease_);
    if (r.holder != opts_.identity) return;
    // Like client-go's ReleaseOnCancel: no holder, and a one-second duration.
    r.holder.clear();
    r.durationSeconds = 1;
    r.renewTime = formatMicroTime(std::chrono::system_clock::now());
    setLeaseRecord(lastLease_, r);
    client_.setDeadline(Clock::now() + std::chrono::seconds(3));
    auto put = client_.replace(k8s::objectPath(k8s::kLease, opts_.ns, opts_.name), lastLease_);
    if (put)
        logging::logInfo("released Lease " + opts_.ns + "/" + opts_.name);
    else
        logging::logWarn("releasing Lease " + opts_.ns + "/" + opts_.name + ": " +
                         put.error().message);
    setLeading(false);
}

void LeaderElector::run() {
    const auto renewDeadline = opts_.duration - opts_.renewInterval;
    while (!stop_.stopped()) {
        const bool ok = tryAcquireOrRenew();
        const auto now = Clock::now();
        if (ok) {
            setLeading(true);
        } else if (leading_ && (now - lastRenew_ >= renewDeadline ||
                                (observed_ && observed_->holder != opts_.identity))) {
            setLeading(false);
        }
        auto next = now + opts_.renewInterval;
        if (!leading_ && observed_ && !observed_->holder.empty()) {
            // Try again right when the holder's claim runs out, not up to an interval later.
            const auto expiry =
                observedAt_ +
                std::chrono::seconds(std::max<int64_t>(observed_->durationSeconds, 1)) +
                std::chrono::milliseconds(10);
            if (expiry > now && expiry < next) next = expiry;
        }
        if (leading_) next = std::min(next, lastRenew_ + renewDeadline);
        stop_.waitUntil(next);
    }
    release();
}

}  // namespace allot::gc
