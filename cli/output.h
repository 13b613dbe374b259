#pragma once
// Printing a command's document: as tables for people, as JSON or YAML for scripts (the same
// document, so the field names are the same in both). No colour, whatever the terminal.

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "json/json.h"

namespace allot::cli {

struct Table {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
};

// Columns padded to their widest cell, separated by three spaces; "" cells print as "-".
void printTable(std::ostream& out, const Table& t);
// Indented by two spaces, one member a line; ends with a newline.
void printJson(std::ostream& out, const json::Value& v);
// Block YAML; strings always double-quoted (JSON escapes), so no value is misread.
void printYaml(std::ostream& out, const json::Value& v);

// The document in `format`; for Table and Wide, `table` writes it.
void emit(std::ostream& out, Format format, const json::Value& doc,
          const std::function<void(std::ostream&)>& table);

// Readers for building tables from a document: "" / 0 / false when absent.
std::string text(const json::Value& obj, std::string_view key);
bool flag(const json::Value& obj, std::string_view key);
const json::Value::Array& list(const json::Value& obj, std::string_view key);

// JSON builders.
json::Value str(const std::string& s);
json::Value num(uint64_t n);

}  // namespace allot::cli
