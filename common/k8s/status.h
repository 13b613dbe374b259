#pragma once
// Mapping of API server answers to allot's error codes. Pure: no I/O.

#include <optional>
#include <string_view>

#include "core/result.h"

namespace allot::k8s {

// nullopt for 2xx. Otherwise an error whose message names the verb, the resource path (without
// query) and, for 401, the identity; the Kubernetes Status body's message is used when the body
// is one (any other body is summarised, never dumped whole):
//   401 Unauthorized   403 Forbidden (the server's message names verb, resource and user)
//   404 NotFound       409 AlreadyExists if Status.reason is "AlreadyExists", else Conflict
//   410 Expired        422 Invalid
//   408, 429, 5xx Transient (" retry after Ns" appended when retryAfterSeconds is given)
//   anything else Internal.
std::optional<core::Error> mapStatus(long status, std::string_view body, std::string_view verb,
                                     std::string_view path, std::string_view identity,
                                     std::optional<int> retryAfterSeconds = std::nullopt);

}  // namespace allot::k8s
