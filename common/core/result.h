#pragma once
// Result<T>: an expected outcome as a value (shaped like std::expected, which g++ 12 lacks).
// A lost race (Conflict) or a missing object (NotFound) is a normal return, not an exception.
// The error is an Error (a code and a message) but at a boundary with a vocabulary of its own,
// which names its type (Result<HttpResponse, k8s::TransportError>) and is converted to an
// Error in one place.

#include <cassert>
#include <concepts>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace allot::core {

enum class Errc {
    InvalidConfig,   // a configuration key or value is wrong (CNI 7)
    BadEnvironment,  // CNI_* environment or CNI_ARGS is wrong (CNI 4)
    Decode,          // input is not parseable JSON (CNI 6)
    NotFound,        // object or allocation absent (HTTP 404)
    Conflict,        // optimistic-concurrency precondition failed (HTTP 409 on update)
    AlreadyExists,   // create of an existing object (HTTP 409 on create)
    Invalid,         // the server rejected the object (HTTP 422)
    Expired,         // the resourceVersion is too old (HTTP 410 Gone): relist
    Exhausted,       // no free address in a range
    TooLarge,        // over a size limit: a pool object past what etcd (or allot's estimate of
                     // it) takes, more entries than a reader keeps
    SliceSealed,     // a slice pool allot-gc's slice controller is taking: its next part, or later
    SliceMoved,      // the node's slice is another node's now: the targets read were stale
    SliceAwaited,    // no slice of a NodeSlicePool is assigned to this node yet
    Transient,       // try again later: timeouts, 429, 5xx, connection refused (CNI 11)
    Unauthorized,    // 401: credentials missing, expired or wrong
    Forbidden,       // 403: RBAC denied the request
    Unsupported,     // verb or version not supported (CNI 1 / 2)
    Internal,        // a bug or an unexpected state
};

const char* errcName(Errc code);

struct Error {
    Errc code;
    std::string message;
};

inline Error makeError(Errc code, std::string message) {
    return Error{code, std::move(message)};
}

template <typename T, typename E = Error>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Result(E error) : v_(std::in_place_index<1>, std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & {
        assert(ok());
        return std::get<0>(v_);
    }
    const T& value() const& {
        assert(ok());
        return std::get<0>(v_);
    }
    T&& value() && {
        assert(ok());
        return std::get<0>(std::move(v_));
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const E& error() const {
        assert(!ok());
        return std::get<1>(v_);
    }
    Errc code() const requires std::same_as<E, Error> { return error().code; }

  private:
    std::variant<T, E> v_;
};

template <typename E>
class [[nodiscard]] Result<void, E> {
  public:
    Result() = default;
    Result(E error) : err_(std::move(error)) {}

    bool ok() const { return !err_; }
    explicit operator bool() const { return ok(); }
    const E& error() const {
        assert(!ok());
        return *err_;
    }
    Errc code() const requires std::same_as<E, Error> { return error().code; }

  private:
    std::optional<E> err_;
};

inline Result<void> success() {
    return {};
}

}  // namespace allot::core
