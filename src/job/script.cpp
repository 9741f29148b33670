#include "polygraphy/job/script.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

// Writes `code` (one or more lines) indented by `indent` spaces.
void write_indented(std::ostringstream& out, const std::string& code, int indent) {
    std::istringstream lines(code);
    std::string line;
    while (std::getline(lines, line)) {
        if (!line.empty()) out << std::string(static_cast<std::size_t>(indent), ' ') << line;
        out << '\n';
    }
}

bool is_identifier(const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
}

}  // namespace

void Script::add_include(const std::string& header) {
    for (const auto& existing : includes_)
        if (existing == header) return;
    includes_.push_back(header);
}

std::string Script::add_loader(const std::string& expression, const std::string& base_name) {
    if (!is_identifier(base_name)) throw InternalError("Script::add_loader: '" + base_name + "' is not an identifier");
    for (const auto& loader : loaders_)
        if (!loader.name.empty() && loader.expression == expression) return loader.name;
    std::string name = base_name;
    for (int suffix = 1;; ++suffix) {
        bool taken = false;
        for (const auto& loader : loaders_) taken = taken || loader.name == name;
        if (!taken) break;
        name = base_name + "_" + std::to_string(suffix);
    }
    loaders_.push_back({name, expression});
    return name;
}

void Script::append_loader_statement(const std::string& code) {
    loaders_.push_back({"", code});
}

void Script::append_prefix(const std::string& code) {
    prefix_.push_back(code);
}

void Script::add_runner(const std::string& expression) {
    runners_.push_back(expression);
}

void Script::set_data_loader(const std::string& setup, const std::string& expression) {
    data_loader_setup_ = setup;
    data_loader_ = expression;
}

void Script::append_suffix(const std::string& code) {
    suffix_.push_back(code);
}

std::string Script::to_string(const std::vector<std::string>& header_comment) const {
    std::ostringstream out;
    for (const auto& line : header_comment) out << "// " << line << '\n';
    out << "#include <limits>\n#include <memory>\n#include <optional>\n#include <string>\n#include <vector>\n\n";
    std::vector<std::string> includes = includes_;
    for (const char* always : {"polygraphy/backend/base/runner.h", "polygraphy/common/exception.h",
                               "polygraphy/common/logger.h", "polygraphy/comparator/data_loader.h"}) {
        bool present = false;
        for (const auto& header : includes) present = present || header == always;
        if (!present) includes.push_back(always);
    }
    for (const auto& header : includes) out << "#include \"" << header << "\"\n";
    out << "\nusing namespace polygraphy;\n\nint main() {\n    try {\n";
    for (const auto& code : prefix_) write_indented(out, code, 8);
    if (!loaders_.empty()) {
        out << (without_inference_ ? "        // Loaders: lazy; nothing is loaded until one is called.\n"
                                   : "        // Loaders: lazy; nothing is loaded until a runner is activated.\n");
        for (const auto& loader : loaders_)
            write_indented(
                out, loader.name.empty() ? loader.expression : "auto " + loader.name + " = " + loader.expression + ";",
                8);
        out << '\n';
    }
    if (!without_inference_) {
        out << "        std::vector<std::unique_ptr<BaseRunner>> runners;\n";
        for (const auto& runner : runners_) write_indented(out, "runners.push_back(" + runner + ");", 8);
        out << '\n';
        if (!data_loader_setup_.empty()) write_indented(out, data_loader_setup_, 8);
        write_indented(
            out,
            "DataLoaderFn data_loader = " + (data_loader_.empty() ? "DataLoader().as_function()" : data_loader_) + ";",
            8);
        out << '\n';
    }
    out << "        bool success = true;\n";
    for (const auto& code : suffix_) write_indented(out, code, 8);
    out << "        return success ? 0 : 1;\n"
           "    } catch (const PolygraphyException& error) {\n"
           "        logger().critical(error.what());\n"
           "        return 1;\n"
           "    }\n"
           "}\n";
    return out.str();
}

std::string Script::quote(std::string_view text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20 || c >= 0x7f) {
                    // Octal escapes stop after three digits, so a following digit cannot join them.
                    char escaped[8];
                    std::snprintf(escaped, sizeof(escaped), "\\%03o", c);
                    out += escaped;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

std::string Script::number(double value) {
    if (std::isnan(value)) return "std::numeric_limits<double>::quiet_NaN()";
    if (std::isinf(value))
        return value > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
    char text[64];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(text, sizeof(text), "%.*g", precision, value);
        if (std::strtod(text, nullptr) == value) break;
    }
    std::string literal = text;
    // Keep it a double literal (`1` would be an int and change overloads or arithmetic).
    if (literal.find_first_of(".eE") == std::string::npos) literal += ".0";
    return literal;
}

std::string Script::integer(int64_t value) {
    return value == std::numeric_limits<int64_t>::min() ? std::string("std::numeric_limits<int64_t>::min()")
                                                        : std::to_string(value);
}

std::string Script::string_vector(const std::vector<std::string>& items) {
    std::string out = "std::vector<std::string>{";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + quote(items[i]);
    return out + "}";
}

}  // namespace polygraphy
