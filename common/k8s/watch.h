#pragma once
// Framing of a watch response: newline-delimited JSON events that may span, or share, the
// chunks the transport delivers. Pure: no I/O.

#include <functional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "json/json.h"

namespace allot::k8s {

struct WatchEvent {
    enum class Type { Added, Modified, Deleted, Bookmark, Error };
    Type type = Type::Added;
    json::Value object;  // the object; for Error, the Status
};

const char* watchEventTypeName(WatchEvent::Type type);

inline constexpr size_t kMaxWatchEventBytes = 4u << 20;

// Splits a byte stream into lines. Blank lines are skipped; a trailing '\r' is dropped.
class LineSplitter {
  public:
    using OnLine = std::function<bool(std::string_view line)>;  // false: stop

    explicit LineSplitter(size_t maxLineBytes = kMaxWatchEventBytes) : max_(maxLineBytes) {}

    // Calls onLine for each line completed by `chunk`. Returns false when onLine asked to stop
    // (the rest of the chunk is dropped). Errors: Decode when a line exceeds the maximum; the
    // splitter then stays failed.
    core::Result<bool> feed(std::string_view chunk, const OnLine& onLine);

    // End of stream: delivers an unterminated last line, if any.
    core::Result<bool> finish(const OnLine& onLine);

    size_t pendingBytes() const { return partial_.size(); }

  private:
    core::Result<bool> emit(std::string_view line, const OnLine& onLine);

    size_t max_;
    std::string partial_;
    bool failed_ = false;
};

// Decodes one line of a watch stream. Errors: Decode for anything but a JSON object with a
// known "type" and an object-valued "object".
core::Result<WatchEvent> parseWatchEvent(std::string_view line);

}  // namespace allot::k8s
