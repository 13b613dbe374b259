#include "json/json.h"

#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cassert>
#include <charconv>
#include <cstdlib>
#include <optional>

namespace allot::json {

using core::Errc;
using core::Result;

Value Value::boolean(bool b) {
    Value v;
    v.type_ = Type::Bool;
    v.b_ = b;
    return v;
}
Value Value::string(std::string s) {
    Value v;
    v.type_ = Type::String;
    v.s_ = std::move(s);
    return v;
}
Value Value::number(int64_t n) {
    return numberText(std::to_string(n));
}
Value Value::numberText(std::string text) {
    Value v;
    v.type_ = Type::Number;
    v.s_ = std::move(text);
    return v;
}
Value Value::array() {
    Value v;
    v.type_ = Type::Array;
    return v;
}
Value Value::object() {
    Value v;
    v.type_ = Type::Object;
    return v;
}

std::optional<int64_t> Value::asInt() const {
    if (type_ != Type::Number) return std::nullopt;
    int64_t out = 0;
    auto [p, ec] = std::from_chars(s_.data(), s_.data() + s_.size(), out);
    if (ec != std::errc() || p != s_.data() + s_.size()) return std::nullopt;
    return out;
}

std::optional<double> Value::asDouble() const {
    if (type_ != Type::Number) return std::nullopt;
    char* end = nullptr;
    double d = std::strtod(s_.c_str(), &end);
    if (end != s_.c_str() + s_.size()) return std::nullopt;
    return d;
}

const Value* Value::find(std::string_view key) const {
    if (type_ != Type::Object) return nullptr;
    for (auto it = obj_.rbegin(); it != obj_.rend(); ++it) {
        if (it->first == key) return &it->second;
    }
    return nullptr;
}

Value* Value::find(std::string_view key) {
    return const_cast<Value*>(static_cast<const Value*>(this)->find(key));
}

Value& Value::set(std::string key, Value v) {
    if (type_ == Type::Null) type_ = Type::Object;
    assert(type_ == Type::Object);
    erase(key);
    obj_.emplace_back(std::move(key), std::move(v));
    return obj_.back().second;
}

bool Value::erase(std::string_view key) {
    bool any = false;
    for (auto it = obj_.begin(); it != obj_.end();) {
        if (it->first == key) {
            it = obj_.erase(it);
            any = true;
        } else {
            ++it;
        }
    }
    return any;
}

Value& Value::push(Value v) {
    if (type_ == Type::Null) type_ = Type::Array;
    assert(type_ == Type::Array);
    arr_.push_back(std::move(v));
    return arr_.back();
}

const char* Value::typeName() const {
    switch (type_) {
        case Type::Null:
            return "null";
        case Type::Bool:
            return "boolean";
        case Type::Number:
            return "number";
        case Type::String:
            return "string";
        case Type::Array:
            return "array";
        case Type::Object:
            return "object";
    }
    return "?";
}

Result<std::optional<std::string>> Value::getString(std::string_view key) const {
    const Value* v = find(key);
    if (!v || v->isNull()) return std::optional<std::string>{};
    if (!v->isString()) {
        return core::makeError(
            Errc::InvalidConfig,
            "\"" + std::string(key) + "\" must be a string, got " + v->typeName());
    }
    return std::optional<std::string>{v->asString()};
}

Result<std::optional<bool>> Value::getBool(std::string_view key) const {
    const Value* v = find(key);
    if (!v || v->isNull()) return std::optional<bool>{};
    if (!v->isBool()) {
        return core::makeError(
            Errc::InvalidConfig,
            "\"" + std::string(key) + "\" must be a boolean, got " + v->typeName());
    }
    return std::optional<bool>{v->asBool()};
}

bool operator==(const Value& a, const Value& b) {
    if (a.type_ != b.type_) return false;
    switch (a.type_) {
        case Value::Type::Null:
            return true;
        case Value::Type::Bool:
            return a.b_ == b.b_;
        case Value::Type::Number: {
            if (a.s_ == b.s_) return true;
            auto x = a.asDouble(), y = b.asDouble();
            return x && y && *x == *y;
        }
        case Value::Type::String:
            return a.s_ == b.s_;
        case Value::Type::Array:
            return a.arr_ == b.arr_;
        case Value::Type::Object:
            return a.obj_ == b.obj_;
    }
    return false;
}

namespace {

template <typename Writer>
void write(const Value& v, Writer& w) {
    switch (v.type()) {
        case Value::Type::Null:
            w.Null();
            break;
        case Value::Type::Bool:
            w.Bool(v.asBool());
            break;
        case Value::Type::Number:
            w.RawValue(v.asString().data(), v.asString().size(), rapidjson::kNumberType);
            break;
        case Value::Type::String:
            w.String(v.asString().data(), static_cast<rapidjson::SizeType>(v.asString().size()));
            break;
        case Value::Type::Array:
            w.StartArray();
            for (const auto& item : v.items()) write(item, w);
            w.EndArray();
            break;
        case Value::Type::Object:
            w.StartObject();
            for (const auto& [k, item] : v.members()) {
                w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
                write(item, w);
            }
            w.EndObject();
            break;
    }
}

// Counts what a rapidjson::Writer writes (Tap::measureOnly).
struct CountingStream {
    using Ch = char;
    size_t bytes = 0;
    void Put(char) { ++bytes; }
    void Flush() {}
};

// Builds a Value tree from RapidJSON's SAX events, enforcing a nesting limit, and hands the
// values at the taps' paths over as they complete.
class Builder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Builder> {
  public:
    Builder(size_t maxDepth, const std::vector<Tap>& taps) : maxDepth_(maxDepth), taps_(taps) {}

    bool Null() { return add(Value::null()); }
    bool Bool(bool b) { return add(Value::boolean(b)); }
    bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
        return add(Value::numberText(std::string(s, n)));
    }
    bool String(const char* s, rapidjson::SizeType n, bool) {
        return add(Value::string(std::string(s, n)));
    }
    bool Key(const char* s, rapidjson::SizeType n, bool) {
        if (measureDepth_ > 0) return writer_->Key(s, n);
        key_.assign(s, n);
        return true;
    }
    bool StartObject() { return open(Value::object()); }
    bool EndObject(rapidjson::SizeType) { return close(true); }
    bool StartArray() { return open(Value::array()); }
    bool EndArray(rapidjson::SizeType) { return close(false); }

    Value take() { return std::move(root_); }
    bool depthExceeded() const { return depthExceeded_; }
    bool stopped() const { return stopped_; }

  private:
    struct Frame {
        Value* value;
        std::string key;  // its key in its parent ("" for an array element, the root)
        int tap;          // the tap it goes to when complete, or -1
    };

    // The tap the value starting now (key_, under stack_) goes to, or -1.
    int tapFor() const {
        const size_t depth = stack_.size();
        for (size_t t = 0; t < taps_.size(); ++t) {
            const auto& path = taps_[t].path;
            bool match = path.size() == depth;
            for (size_t j = 0; match && j < depth; ++j) {
                const std::string& key = j + 1 < depth ? stack_[j + 1].key : key_;
                match =
                    stack_[j].value->isArray() ? path[j] == "[]" : path[j] == "*" || path[j] == key;
            }
            if (match) return static_cast<int>(t);
        }
        return -1;
    }
    bool give(int tap, const std::string& key, Value& v) {
        if (taps_[static_cast<size_t>(tap)].take(key, v)) return true;
        stopped_ = true;
        return false;
    }
    // The new value's key, consumed.
    std::string takeKey() {
        std::string k = stack_.back().value->isArray() ? std::string() : std::move(key_);
        key_.clear();
        return k;
    }
    Value* append(std::string key, Value v) {
        Value* top = stack_.back().value;
        if (top->isArray()) return &top->items().emplace_back(std::move(v));
        return &top->members().emplace_back(std::move(key), std::move(v)).second;
    }
    bool add(Value v) {
        if (measureDepth_ > 0) {
            write(v, *writer_);
            return true;
        }
        if (stack_.empty()) {
            root_ = std::move(v);
            return true;
        }
        const int tap = tapFor();
        std::string key = takeKey();
        if (tap < 0) {
            append(std::move(key), std::move(v));
            return true;
        }
        if (taps_[static_cast<size_t>(tap)].measureOnly && !v.isNull())
            v = Value::number(static_cast<int64_t>(v.dump().size()));
        return give(tap, key, v);
    }
    bool open(Value v) {
        if (stack_.size() + measureDepth_ >= maxDepth_) {
            depthExceeded_ = true;
            return false;
        }
        if (measureDepth_ > 0) {
            ++measureDepth_;
            return v.isObject() ? writer_->StartObject() : writer_->StartArray();
        }
        if (stack_.empty()) {
            root_ = std::move(v);
            stack_.push_back({&root_, {}, -1});
            return true;
        }
        const int tap = tapFor();
        std::string key = takeKey();
        if (tap >= 0 && taps_[static_cast<size_t>(tap)].measureOnly) {
            counted_.bytes = 0;
            writer_.emplace(counted_);
            measureDepth_ = 1;
            measured_ = {nullptr, std::move(key), tap};
            return v.isObject() ? writer_->StartObject() : writer_->StartArray();
        }
        Value* child = append(key, std::move(v));
        stack_.push_back({child, std::move(key), tap});
        return true;
    }
    bool close(bool object) {
        if (measureDepth_ > 0) {
            if (!(object ? writer_->EndObject() : writer_->EndArray())) return false;
            if (--measureDepth_ > 0) return true;
            writer_.reset();
            Value size = Value::number(static_cast<int64_t>(counted_.bytes));
            return give(measured_.tap, measured_.key, size);
        }
        Frame done = std::move(stack_.back());
        stack_.pop_back();
        if (done.tap < 0) return true;
        // A tapped value is the last member or element of its parent: moved out, then dropped.
        Value taken = std::move(*done.value);
        Value* parent = stack_.back().value;
        if (parent->isArray())
            parent->items().pop_back();
        else
            parent->members().pop_back();
        return give(done.tap, done.key, taken);
    }

    size_t maxDepth_;
    const std::vector<Tap>& taps_;
    bool depthExceeded_ = false;
    bool stopped_ = false;
    Value root_;
    std::vector<Frame> stack_;  // pointers stay valid: only the innermost container grows
    std::string key_;
    // Inside a measureOnly value: its depth, and where its compact form is counted.
    size_t measureDepth_ = 0;
    Frame measured_{nullptr, {}, -1};
    CountingStream counted_;
    std::optional<rapidjson::Writer<CountingStream>> writer_;
};

}  // namespace

std::string Value::dump() const {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    write(*this, w);
    return std::string(buf.GetString(), buf.GetSize());
}

Result<Value> parse(std::string_view text, ParseLimits limits) {
    return parse(text, {}, limits);
}

Result<Value> parse(std::string_view text, const std::vector<Tap>& taps, ParseLimits limits) {
    if (text.size() > limits.maxBytes) {
        return core::makeError(Errc::Decode, "JSON document of " + std::to_string(text.size()) +
                                                 " bytes exceeds the limit of " +
                                                 std::to_string(limits.maxBytes));
    }
    Builder builder(limits.maxDepth, taps);
    rapidjson::Reader reader;
    rapidjson::MemoryStream ms(text.data(), text.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> is(ms);
    constexpr unsigned kFlags = rapidjson::kParseNumbersAsStringsFlag |
                                rapidjson::kParseValidateEncodingFlag |
                                rapidjson::kParseIterativeFlag;
    rapidjson::ParseResult pr = reader.Parse<kFlags>(is, builder);
    if (!pr && builder.stopped()) return builder.take();
    if (!pr) {
        if (builder.depthExceeded()) {
            return core::makeError(Errc::Decode, "JSON nested deeper than " +
                                                     std::to_string(limits.maxDepth) + " levels");
        }
        return core::makeError(Errc::Decode, std::string("invalid JSON at offset ") +
                                                 std::to_string(pr.Offset()) + ": " +
                                                 rapidjson::GetParseError_En(pr.Code()));
    }
    return builder.take();
}

std::string stringAt(const Value& obj, std::initializer_list<const char*> path) {
    const Value* v = &obj;
    for (const char* k : path) {
        if (!v->isObject()) return {};
        v = v->find(k);
        if (!v) return {};
    }
    return v->isString() ? v->asString() : std::string();
}

}  // namespace allot::json
