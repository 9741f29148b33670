// Internal text helpers shared by the printers that reproduce Polygraphy's Python formatting.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace polygraphy::text {

/// Python's `indent_block`: every line of str.splitlines() prefixed with `level` tabs of 4 spaces.
inline std::string indent_block(const std::string& block, int level = 1) {
    const std::string tab(static_cast<std::size_t>(4 * level), ' ');
    std::string out = tab;
    std::size_t start = 0;
    bool first = true;
    while (start < block.size()) {
        std::size_t end = block.find('\n', start);
        if (end == std::string::npos) end = block.size();
        if (!first) out += "\n" + tab;
        first = false;
        out.append(block, start, end - start);
        start = end + 1;
    }
    return out;
}

/// An error figure in log lines and tables: 4 significant digits, "nan", "inf", "-inf".
inline std::string figure(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    return fmt::format("{:.4g}", value);
}

/// The first `most` names joined with ", ", then " (+N)" for the N left out.
inline std::string join_first(const std::vector<std::string>& names, std::size_t most) {
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < most; ++i) text += (i ? ", " : "") + names[i];
    if (names.size() > most) text += fmt::format(" (+{})", names.size() - most);
    return text;
}

/// Python's str.strip(): leading and trailing whitespace removed.
inline std::string strip(const std::string& text) {
    const auto begin = text.find_first_not_of(" \t\n\r\f\v");
    if (begin == std::string::npos) return "";
    const auto end = text.find_last_not_of(" \t\n\r\f\v");
    return text.substr(begin, end - begin + 1);
}

/// Text made safe inside HTML or XML markup, element content and quoted attributes alike:
/// `&`, `<`, `>`, `"` and `'` become character references.
inline std::string markup_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

}  // namespace polygraphy::text
