#pragma once
// allot's JSON value. RapidJSON is used only by json.cpp; everything else sees these types.
// Numbers keep their source text so 64-bit offsets and large integers round-trip exactly.

#include <cstdint>
#include <functional>
#include <initializer_list>
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

// A place in a document where parse() hands each value over as soon as it is complete, instead
// of keeping it in the tree: a list page's items, a pool's entries. Memory then holds one such
// value at a time, not the whole document.
struct Tap {
    // From the root: a member key, "*" (any member of an object) or "[]" (any element of an
    // array).
    std::vector<std::string> path;
    // Called with the value's key (an array element's: "") once it is complete; the tree keeps
    // nothing of it. False stops the parse.
    std::function<bool(const std::string& key, Value& value)> take;
    // The value is not even built: `take` gets null for a null, else a number, the size in
    // bytes of its compact form (Value::dump().size()).
    bool measureOnly = false;
};

// As parse(), with the values at the taps' paths handed to them. A tap that returns false
// ends the parse early: the result is then the tree as far as it got.
core::Result<Value> parse(std::string_view text, const std::vector<Tap>& taps,
                          ParseLimits limits = {});

// The string at `path` (object keys from `obj`); "" when a step is missing or not an object,
// or the value is not a string.
std::string stringAt(const Value& obj, std::initializer_list<const char*> path);

}  // namespace allot::json
