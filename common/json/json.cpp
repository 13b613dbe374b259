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

// Builds a Value tree from RapidJSON's SAX events, enforcing a nesting limit.
class Builder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, Builder> {
  public:
    explicit Builder(size_t maxDepth) : maxDepth_(maxDepth) {}

    bool Null() { return add(Value::null()); }
    bool Bool(bool b) { return add(Value::boolean(b)); }
    bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
        return add(Value::numberText(std::string(s, n)));
    }
    bool String(const char* s, rapidjson::SizeType n, bool) {
        return add(Value::string(std::string(s, n)));
    }
    bool Key(const char* s, rapidjson::SizeType n, bool) {
        key_.assign(s, n);
        return true;
    }
    bool StartObject() { return open(Value::object()); }
    bool EndObject(rapidjson::SizeType) { return close(); }
    bool StartArray() { return open(Value::array()); }
    bool EndArray(rapidjson::SizeType) { return close(); }

    Value take() { return std::move(root_); }
    bool depthExceeded() const { return depthExceeded_; }

  private:
    bool add(Value v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return true;
        }
        Value* top = stack_.back();
        if (top->isArray()) {
            top->items().push_back(std::move(v));
        } else {
            top->members().emplace_back(std::move(key_), std::move(v));
            key_.clear();
        }
        return true;
    }
    bool open(Value v) {
        if (stack_.size() >= maxDepth_) {
            depthExceeded_ = true;
            return false;
        }
        if (stack_.empty()) {
            root_ = std::move(v);
            stack_.push_back(&root_);
            return true;
        }
        Value* top = stack_.back();
        Value* child;
        if (top->isArray()) {
            top->items().push_back(std::move(v));
            child = &top->items().back();
        } else {
            top->members().emplace_back(std::move(key_), std::move(v));
            key_.clear();
            child = &top->members().back().second;
        }
        stack_.push_back(child);
        return true;
    }
    bool close() {
        stack_.pop_back();
        return true;
    }

    size_t maxDepth_;
    bool depthExceeded_ = false;
    Value root_;
    std::vector<Value*> stack_;  // pointers stay valid: only the innermost container grows
    std::string key_;
};

}  // namespace

std::string Value::dump() const {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    write(*this, w);
    return std::string(buf.GetString(), buf.GetSize());
}

Result<Value> parse(std::string_view text, ParseLimits limits) {
    if (text.size() > limits.maxBytes) {
        return core::makeError(Errc::Decode, "JSON document of " + std::to_string(text.size()) +
                                                 " bytes exceeds the limit of " +
                                                 std::to_string(limits.maxBytes));
    }
    Builder builder(limits.maxDepth);
    rapidjson::Reader reader;
    rapidjson::MemoryStream ms(text.data(), text.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> is(ms);
    constexpr unsigned kFlags = rapidjson::kParseNumbersAsStringsFlag |
                                rapidjson::kParseValidateEncodingFlag |
                                rapidjson::kParseIterativeFlag;
    rapidjson::ParseResult pr = reader.Parse<kFlags>(is, builder);
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

}  // namespace allot::json
