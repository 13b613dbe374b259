#include "k8s/watch.h"

namespace allot::k8s {

using core::Errc;
using core::makeError;
using core::Result;

const char* watchEventTypeName(WatchEvent::Type type) {
    switch (type) {
        case WatchEvent::Type::Added:
            return "ADDED";
        case WatchEvent::Type::Modified:
            return "MODIFIED";
        case WatchEvent::Type::Deleted:
            return "DELETED";
        case WatchEvent::Type::Bookmark:
            return "BOOKMARK";
        case WatchEvent::Type::Error:
            return "ERROR";
    }
    return "UNKNOWN";
}

Result<bool> LineSplitter::emit(std::string_view line, const OnLine& onLine) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return true;
    return onLine(line);
}

Result<bool> LineSplitter::feed(std::string_view chunk, const OnLine& onLine) {
    auto tooLong = [this] {
        failed_ = true;
        partial_.clear();
        partial_.shrink_to_fit();
        return makeError(Errc::Decode,
                         "watch event larger than " + std::to_string(max_) + " bytes");
    };
    if (failed_) return makeError(Errc::Decode, "watch stream already failed");
    while (!chunk.empty()) {
        const size_t nl = chunk.find('\n');
        if (nl == std::string_view::npos) {
            if (partial_.size() + chunk.size() > max_) return tooLong();
            partial_.append(chunk);
            return true;
        }
        std::string_view piece = chunk.substr(0, nl);
        chunk.remove_prefix(nl + 1);
        if (partial_.size() + piece.size() > max_) return tooLong();
        Result<bool> r = true;
        if (partial_.empty()) {
            r = emit(piece, onLine);  // the common case: no copy
        } else {
            partial_.append(piece);
            std::string line = std::move(partial_);
            partial_.clear();
            r = emit(line, onLine);
        }
        if (!r || !*r) return r;
    }
    return true;
}

Result<bool> LineSplitter::finish(const OnLine& onLine) {
    if (failed_) return makeError(Errc::Decode, "watch stream already failed");
    std::string line = std::move(partial_);
    partial_.clear();
    return emit(line, onLine);
}

Result<WatchEvent> parseWatchEvent(std::string_view line) {
    auto v = json::parse(line, json::ParseLimits{kMaxWatchEventBytes, 64});
    if (!v) return makeError(Errc::Decode, "garbled watch event: " + v.error().message);
    if (!v->isObject()) return makeError(Errc::Decode, "watch event is not a JSON object");
    auto type = v->getString("type");
    if (!type) return makeError(Errc::Decode, "watch event: " + type.error().message);
    if (!*type) return makeError(Errc::Decode, "watch event has no type");
    WatchEvent ev;
    const std::string& t = **type;
    if (t == "ADDED")
        ev.type = WatchEvent::Type::Added;
    else if (t == "MODIFIED")
        ev.type = WatchEvent::Type::Modified;
    else if (t == "DELETED")
        ev.type = WatchEvent::Type::Deleted;
    else if (t == "BOOKMARK")
        ev.type = WatchEvent::Type::Bookmark;
    else if (t == "ERROR")
        ev.type = WatchEvent::Type::Error;
    else
        return makeError(Errc::Decode, "watch event has unknown type \"" + t.substr(0, 32) + "\"");
    json::Value* obj = v->find("object");
    if (!obj || !obj->isObject())
        return makeError(Errc::Decode, std::string("watch event ") + t + " has no object");
    ev.object = std::move(*obj);
    return ev;
}

}  // namespace allot::k8s
