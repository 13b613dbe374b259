#pragma once
// allot's JSON value. RapidJSON is used only by json.cpp; everything else sees these types.
// Numbers keep their source text so 64-bit offsets and large integers round-trip exactly.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace allot::json {

class Value {
  public:
    enum class Type { Null, Bool, Number, String, Array, Object };
    using Array = std::vector<Value>;
    using Member = std::pair<std::string, Value>;
    using Object = std::vector<Member>;

    Value() = default;
    static Value null() { return Value(); }
    static Value boolean(bool b);
    static Value string(std::string s);
    static Value number(int64_t n);
    static Value numberText(std::string text);  // caller guarantees valid JSON number text
    static Value array();
    static Value object();

    Type type() const { return type_; }
    bool isNull() const { return type_ == Type::Null; }
    bool isBool() const { return type_ == Type::Bool; }
    bool isNumber() const { return type_ == Type::Number; }
    bool isString() const { return type_ == Type::String; }
    bool isArray() const { return type_ == Type::Array; }
    bool isObject() const { return type_ == Type::Object; }

    bool asBool() const { return b_; }
    const std::string& asString() const { return s_; }  // string, or number text
    std::optional<int64_t> asInt() const;               // integral numbers only
    std::optional<double> asDouble() const;
    const Array& items() const { return arr_; }
    Array& items() { return arr_; }
    const Object& members() const { return obj_; }
    Object& members() { return obj_; }

    // Object access. find returns the last member with that key (as Go's encoding/json does).
    const Value* find(std::string_view key) const;
    Value* find(std::string_view key);
    // Sets (replacing) a member; turns a null into an object.
    Value& set(std::string key, Value v);
    bool erase(std::string_view key);
    // Array append; turns a null into an array.
    Value& push(Value v);

    // Typed lookups used by decoders: nullopt when absent or null; an error when present with
    // the wrong type, naming `key`.
    core::Result<std::optional<std::string>> getString(std::string_view key) const;
    core::Result<std::optional<bool>> getBool(std::string_view key) const;

    std::string dump() const;
    const char* typeName() const;

    friend bool operator==(const Value& a, const Value& b);

  private:
    Type type_ = Type::Null;
    bool b_ = false;
    std::string s_;
    Array arr_;
    Object obj_;
};

struct ParseLimits {
    size_t maxBytes = 64u << 20;
    size_t maxDepth = 64;
};

// Parses one JSON document. Errors (Errc::Decode) say where and what.
core::Result<Value> parse(std::string_view text, ParseLimits limits = {});

}  // namespace allot::json
