#pragma once
// Kubernetes timestamps: Time ("2006-01-02T15:04:05Z") and MicroTime (with microseconds).

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace allot::k8s {

using SystemTime = std::chrono::system_clock::time_point;

std::string formatTime(SystemTime t);       // seconds, UTC, "Z"
std::string formatMicroTime(SystemTime t);  // microseconds, UTC, "Z"
// Accepts both forms (and any fraction of a second); nullopt for anything else.
std::optional<SystemTime> parseTime(std::string_view text);

}  // namespace allot::k8s
