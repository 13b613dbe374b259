#include "cli/output.h"

#include <algorithm>

namespace allot::cli {

void printTable(std::ostream& out, const Table& t) {
    std::vector<size_t> width(t.header.size(), 0);
    auto cell = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
    for (size_t i = 0; i < t.header.size(); ++i) width[i] = t.header[i].size();
    for (const auto& r : t.rows)
        for (size_t i = 0; i < r.size() && i < width.size(); ++i)
            width[i] = std::max(width[i], cell(r[i]).size());
    auto line = [&](const std::vector<std::string>& r, bool header) {
        std::string s;
        for (size_t i = 0; i < width.size(); ++i) {
            const std::string c = i < r.size() ? (header ? r[i] : cell(r[i])) : "-";
            s += c;
            if (i + 1 < width.size()) s += std::string(width[i] - c.size() + 3, ' ');
        }
        out << s << "\n";
    };
    line(t.header, true);
    for (const auto& r : t.rows) line(r, false);
}

namespace {

void jsonAt(std::ostream& out, const json::Value& v, int indent) {
    const std::string pad(indent + 2, ' ');
    if (v.isObject() && !v.members().empty()) {
        out << "{\n";
        for (size_t i = 0; i < v.members().size(); ++i) {
            const auto& [k, m] = v.members()[i];
            out << pad << json::Value::string(k).dump() << ": ";
            jsonAt(out, m, indent + 2);
            out << (i + 1 < v.members().size() ? ",\n" : "\n");
        }
        out << std::string(indent, ' ') << "}";
    } else if (v.isArray() && !v.items().empty()) {
        out << "[\n";
        for (size_t i = 0; i < v.items().size(); ++i) {
            out << pad;
            jsonAt(out, v.items()[i], indent + 2);
            out << (i + 1 < v.items().size() ? ",\n" : "\n");
        }
        out << std::string(indent, ' ') << "]";
    } else {
        out << v.dump();
    }
}

bool scalar(const json::Value& v) {
    return !(v.isObject() && !v.members().empty()) && !(v.isArray() && !v.items().empty());
}

void yamlAt(std::ostream& out, const json::Value& v, int indent);

void yamlMembers(std::ostream& out, const json::Value& v, int indent, bool firstInline) {
    bool first = true;
    for (const auto& [k, m] : v.members()) {
        if (!(first && firstInline)) out << std::string(indent, ' ');
        first = false;
        out << json::Value::string(k).dump() << ":";
        if (scalar(m)) {
            out << " " << m.dump() << "\n";
        } else {
            out << "\n";
            yamlAt(out, m, indent + 2);
        }
    }
}

void yamlAt(std::ostream& out, const json::Value& v, int indent) {
    if (v.isObject()) return yamlMembers(out, v, indent, false);
    for (const auto& item : v.items()) {
        out << std::string(indent, ' ') << "-";
        if (scalar(item)) {
            out << " " << item.dump() << "\n";
        } else if (item.isObject()) {
            out << " ";
            yamlMembers(out, item, indent + 2, true);
        } else {
            out << "\n";
            yamlAt(out, item, indent + 2);
        }
    }
}

}  // namespace

void printJson(std::ostream& out, const json::Value& v) {
    jsonAt(out, v, 0);
    out << "\n";
}

void printYaml(std::ostream& out, const json::Value& v) {
    if (scalar(v)) {
        out << v.dump() << "\n";
        return;
    }
    yamlAt(out, v, 0);
}

void emit(std::ostream& out, Format format, const json::Value& doc,
          const std::function<void(std::ostream&)>& table) {
    switch (format) {
        case Format::Json:
            return printJson(out, doc);
        case Format::Yaml:
            return printYaml(out, doc);
        case Format::Table:
        case Format::Wide:
            return table(out);
    }
}

std::string text(const json::Value& obj, std::string_view key) {
    const json::Value* v = obj.isObject() ? obj.find(key) : nullptr;
    if (!v || v->isNull()) return "";
    if (v->isBool()) return v->asBool() ? "true" : "false";
    return v->asString();
}

bool flag(const json::Value& obj, std::string_view key) {
    const json::Value* v = obj.isObject() ? obj.find(key) : nullptr;
    return v && v->isBool() && v->asBool();
}

const json::Value::Array& list(const json::Value& obj, std::string_view key) {
    static const json::Value::Array kEmpty;
    const json::Value* v = obj.isObject() ? obj.find(key) : nullptr;
    return v && v->isArray() ? v->items() : kEmpty;
}

json::Value str(const std::string& s) {
    return json::Value::string(s);
}
json::Value num(uint64_t n) {
    return json::Value::numberText(std::to_string(n));
}

}  // namespace allot::cli
