#include "tools/plugin/plugin_config.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy::tools {
namespace {

// ---- writing -------------------------------------------------------------------------------------

const std::regex& integer_pattern() {
    static const std::regex pattern("[-+]?[0-9]+");
    return pattern;
}
const std::regex& float_pattern() {
    static const std::regex pattern(
        R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))");
    return pattern;
}
bool is_special_word(const std::string& text) {
    static const std::vector<std::string> words = {"",     "~",     "null",  "Null",  "NULL", "true", "True",
                                                   "TRUE", "false", "False", "FALSE", "yes",  "Yes",  "no",
                                                   "No",   "on",    "On",    "off",   "Off"};
    return std::find(words.begin(), words.end(), text) != words.end();
}

// A string as PyYAML writes it: plain when it reads back as the same string, else single-quoted.
std::string yaml_string(const std::string& text) {
    bool plain = !is_special_word(text) && !std::regex_match(text, integer_pattern()) &&
                 !std::regex_match(text, float_pattern()) && text.front() != ' ' && text.back() != ' ' &&
                 std::string("-?:,[]{}#&*!|>'\"%@`").find(text.front()) == std::string::npos &&
                 text.find(": ") == std::string::npos && text.find(" #") == std::string::npos && text.back() != ':';
    bool control = false;
    for (char c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) control = true;
    if (control) {  // double quotes: the only YAML style with escapes
        std::string quoted = "\"";
        for (char c : text) {
            const auto byte = static_cast<unsigned char>(c);
            if (c == '"' || c == '\\')
                quoted += std::string("\\") + c;
            else if (c == '\n')
                quoted += "\\n";
            else if (c == '\t')
                quoted += "\\t";
            else if (byte < 0x20 || byte == 0x7f)
                quoted += fmt::format("\\x{:02x}", byte);
            else
                quoted += c;
        }
        return quoted + "\"";
    }
    if (plain) return text;
    std::string quoted = "'";
    for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return quoted + "'";
}

std::string yaml_float(double value) {
    if (std::isnan(value)) return ".nan";
    if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
    return python_float_repr(value);
}

// "key: scalar", or "key:" and the list's items at the key's indent (PyYAML's layout).
void write_value(std::string& out, const std::string& indent, const std::string& key, const PatternValue& value) {
    out += indent + yaml_string(key) + ":";
    std::visit(
        [&](const auto& held) {
            using T = std::decay_t<decltype(held)>;
            if constexpr (std::is_same_v<T, int64_t>)
                out += " " + std::to_string(held) + "\n";
            else if constexpr (std::is_same_v<T, double>)
                out += " " + yaml_float(held) + "\n";
            else if constexpr (std::is_same_v<T, std::string>)
                out += " " + yaml_string(held) + "\n";
            else {
                if (held.empty()) {
                    out += " []\n";
                    return;
                }
                out += "\n";
                for (const auto& item : held) {
                    using Item = std::decay_t<decltype(item)>;
                    if constexpr (std::is_same_v<Item, int64_t>)
                        out += indent + "- " + std::to_string(item) + "\n";
                    else if constexpr (std::is_same_v<Item, double>)
                        out += indent + "- " + yaml_float(item) + "\n";
                    else
                        out += indent + "- " + yaml_string(item) + "\n";
                }
            }
        },
        value);
}

// ---- reading -------------------------------------------------------------------------------------

// A code point as UTF-8.
void append_utf8(std::string& out, unsigned long code) {
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else if (code < 0x800) {
        out += static_cast<char>(0xc0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
        out += static_cast<char>(0xe0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (code & 0x3f));
    }
}

struct Line {
    int indent = 0;
    std::string text;  // without indentation and comment
    int number = 0;
};

struct Node {
    enum class Kind { kScalar, kSequence, kMapping } kind = Kind::kScalar;
    std::string scalar;
    bool quoted = false;
    bool null = false;
    std::vector<Node> items;
    std::vector<std::string> keys;  // a mapping's keys, and its values in `items`
    int line = 0;

    void add(std::string key, Node value) {
        keys.push_back(std::move(key));
        items.push_back(std::move(value));
    }
};

class YamlReader {
public:
    YamlReader(std::vector<Line> lines, const std::string& source) : lines_(std::move(lines)), source_(source) {}

    Node document() {
        if (lines_.empty()) {
            Node empty;
            empty.null = true;
            return empty;
        }
        if (lines_.front().indent != 0) fail(lines_.front().number, "the document does not start at column 1");
        Node node = block(0);
        if (at_ < lines_.size()) fail(lines_[at_].number, "unexpected indentation");
        return node;
    }

    [[noreturn]] void fail(int line, const std::string& problem) const {
        throw FormatError(source_ + ":" + std::to_string(line) + ": " + problem);
    }

    // A scalar or flow collection written on one line.
    Node inline_value(const std::string& text, int line) {
        std::size_t at = 0;
        Node node = flow_value(text, at, line, false);
        skip_spaces(text, at);
        if (at != text.size()) fail(line, "unexpected text after a value: " + python_repr(text.substr(at)));
        return node;
    }

private:
    static bool is_item(const std::string& text) { return text == "-" || text.rfind("- ", 0) == 0; }

    // Nesting deeper than any configuration needs is refused before it can exhaust the stack.
    static constexpr int kMaxDepth = 64;
    struct DepthGuard {
        YamlReader& reader;
        DepthGuard(YamlReader& owner, int line) : reader(owner) {
            if (++reader.depth_ > kMaxDepth)
                reader.fail(line, "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
        }
        ~DepthGuard() { --reader.depth_; }
    };

    Node block(int indent) {
        DepthGuard guard(*this, lines_[at_].number);
        return is_item(lines_[at_].text) ? sequence(indent) : mapping(indent);
    }

    Node sequence(int indent) {
        Node node;
        node.kind = Node::Kind::kSequence;
        node.line = lines_[at_].number;
        while (at_ < lines_.size() && lines_[at_].indent == indent && is_item(lines_[at_].text)) {
            Line& line = lines_[at_];
            const std::size_t offset = line.text.find_first_not_of(' ', 1);
            if (offset == std::string::npos) {  // "-": the item is the block below
                ++at_;
                node.items.push_back(nested(indent, line.number));
                continue;
            }
            const std::string rest = line.text.substr(offset);
            if (is_item(rest) || key_split(rest)) {  // "- key: value": a mapping (or sequence) opened inline
                line.indent = indent + static_cast<int>(offset);
                line.text = rest;
                node.items.push_back(block(line.indent));
                continue;
            }
            node.items.push_back(inline_value(rest, line.number));
            ++at_;
        }
        return node;
    }

    Node mapping(int indent) {
        Node node;
        node.kind = Node::Kind::kMapping;
        node.line = lines_[at_].number;
        while (at_ < lines_.size() && lines_[at_].indent == indent) {
            const Line line = lines_[at_];
            if (is_item(line.text)) fail(line.number, "a list item where a key was expected");
            const auto split = key_split(line.text);
            if (!split) fail(line.number, "expected 'key: value', found " + python_repr(line.text));
            std::string key = split->first;
            if (!key.empty() && (key.front() == '\'' || key.front() == '"'))
                key = inline_value(key, line.number).scalar;
            for (const std::string& existing : node.keys)
                if (existing == key) fail(line.number, "key '" + key + "' appears twice");
            ++at_;
            if (!split->second.empty()) {
                node.add(key, inline_value(split->second, line.number));
                continue;
            }
            // "key:" then a block below, or a list at the same indent (PyYAML's layout).
            if (at_ < lines_.size() && lines_[at_].indent == indent && is_item(lines_[at_].text))
                node.add(key, sequence(indent));
            else
                node.add(key, nested(indent, line.number));
        }
        if (at_ < lines_.size() && lines_[at_].indent > indent) fail(lines_[at_].number, "unexpected indentation");
        return node;
    }

    Node nested(int indent, int line) {
        if (at_ < lines_.size() && lines_[at_].indent > indent) return block(lines_[at_].indent);
        Node empty;
        empty.null = true;
        empty.line = line;
        return empty;
    }

    // "key: value" or "key:" (the key may be quoted); nullopt when the line is no mapping entry.
    static std::optional<std::pair<std::string, std::string>> key_split(const std::string& text) {
        std::size_t at = 0;
        if (!text.empty() && (text[0] == '\'' || text[0] == '"')) {
            const char quote = text[0];
            for (at = 1; at < text.size(); ++at) {
                if (text[at] == quote) {
                    if (quote == '\'' && at + 1 < text.size() && text[at + 1] == '\'') {
                        ++at;
                        continue;
                    }
                    break;
                }
                if (quote == '"' && text[at] == '\\') ++at;
            }
            if (at >= text.size()) return std::nullopt;
            ++at;
            if (at < text.size() && text[at] == ':' && (at + 1 == text.size() || text[at + 1] == ' '))
                return std::make_pair(text.substr(0, at), trim(text.substr(at + 1)));
            return std::nullopt;
        }
        if (!text.empty() && (text[0] == '[' || text[0] == '{')) return std::nullopt;
        for (at = 0; at < text.size(); ++at)
            if (text[at] == ':' && (at + 1 == text.size() || text[at + 1] == ' '))
                return std::make_pair(trim(text.substr(0, at)), trim(text.substr(at + 1)));
        return std::nullopt;
    }

    static std::string trim(const std::string& text) {
        const std::size_t first = text.find_first_not_of(' ');
        if (first == std::string::npos) return "";
        return text.substr(first, text.find_last_not_of(' ') - first + 1);
    }
    static void skip_spaces(const std::string& text, std::size_t& at) {
        while (at < text.size() && text[at] == ' ') ++at;
    }

    Node flow_value(const std::string& text, std::size_t& at, int line, bool in_flow) {
        DepthGuard guard(*this, line);
        skip_spaces(text, at);
        Node node;
        node.line = line;
        if (at < text.size() && (text[at] == '[' || text[at] == '{')) {
            const bool is_list = text[at] == '[';
            const char close = is_list ? ']' : '}';
            node.kind = is_list ? Node::Kind::kSequence : Node::Kind::kMapping;
            ++at;
            skip_spaces(text, at);
            if (at < text.size() && text[at] == close) {
                ++at;
                return node;
            }
            while (true) {
                if (is_list) {
                    node.items.push_back(flow_value(text, at, line, true));
                } else {
                    Node key = flow_value(text, at, line, true);
                    skip_spaces(text, at);
                    if (at >= text.size() || text[at] != ':') fail(line, "expected ':' in a flow mapping");
                    ++at;
                    node.add(key.scalar, flow_value(text, at, line, true));
                }
                skip_spaces(text, at);
                if (at < text.size() && text[at] == ',') {
                    ++at;
                    continue;
                }
                if (at < text.size() && text[at] == close) {
                    ++at;
                    return node;
                }
                fail(line, std::string("expected ',' or '") + close + "' in a flow collection");
            }
        }
        if (at < text.size() && (text[at] == '\'' || text[at] == '"')) {
            const char quote = text[at++];
            node.quoted = true;
            while (true) {
                if (at >= text.size()) fail(line, "unterminated quoted string");
                const char c = text[at++];
                if (c == quote) {
                    if (quote == '\'' && at < text.size() && text[at] == '\'') {
                        node.scalar += '\'';
                        ++at;
                        continue;
                    }
                    break;
                }
                if (quote == '"' && c == '\\') {
                    if (at >= text.size()) fail(line, "unterminated quoted string");
                    const char escaped = text[at++];
                    switch (escaped) {
                        case 'n':
                            node.scalar += '\n';
                            break;
                        case 't':
                            node.scalar += '\t';
                            break;
                        case '"':
                        case '\\':
                        case '/':
                            node.scalar += escaped;
                            break;
                        case 'x':
                        case 'u': {
                            const std::size_t digits = escaped == 'x' ? 2 : 4;
                            const std::string hex = at + digits <= text.size() ? text.substr(at, digits) : "";
                            if (hex.size() != digits ||
                                hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
                                fail(line, std::string("a bad escape \\") + escaped + " in a quoted string");
                            append_utf8(node.scalar, std::stoul(hex, nullptr, 16));
                            at += digits;
                            break;
                        }
                        default:
                            fail(line, std::string("unsupported escape \\") + escaped + " in a quoted string");
                    }
                    continue;
                }
                node.scalar += c;
            }
            return node;
        }
        const std::size_t start = at;
        while (at < text.size() && !(in_flow && (text[at] == ',' || text[at] == ']' || text[at] == '}' ||
                                                 (text[at] == ':' && (at + 1 == text.size() || text[at + 1] == ' ')))))
            ++at;
        node.scalar = trim(text.substr(start, at - start));
        if (!node.scalar.empty() && std::string("&*!|>%@`").find(node.scalar.front()) != std::string::npos)
            fail(line,
                 "YAML anchors, aliases, tags and block scalars are not supported here: " + python_repr(node.scalar));
        node.null = node.scalar.empty() || node.scalar == "~" || node.scalar == "null" || node.scalar == "Null" ||
                    node.scalar == "NULL";
        return node;
    }

    std::vector<Line> lines_;
    std::size_t at_ = 0;
    int depth_ = 0;
    const std::string& source_;
};

// Removes a comment: '#' at the start or after a space, outside quotes.
std::string without_comment(const std::string& text) {
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote) {
            if (quote == '"' && c == '\\')
                ++i;  // an escaped character, a quote among them
            else if (quote == '\'' && c == '\'' && i + 1 < text.size() && text[i + 1] == '\'')
                ++i;  // '' is a quote inside single quotes
            else if (c == quote)
                quote = 0;
            continue;
        }
        if (c == '\'' || c == '"') {
            // A quote opens a quoted scalar only where a scalar starts (an apostrophe inside a plain one does not).
            const std::size_t before = text.find_last_not_of(' ', i == 0 ? std::string::npos : i - 1);
            if (i == 0 || before == std::string::npos || std::string(":-[{,?").find(text[before]) != std::string::npos)
                quote = c;
        }
        if (c == '#' && (i == 0 || text[i - 1] == ' ')) return text.substr(0, i);
    }
    return text;
}

std::vector<std::vector<Line>> split_documents(std::string_view text, const std::string& source) {
    std::vector<std::vector<Line>> documents(1);
    int number = 0;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string raw(text.substr(start, end - start));
        start = end + 1;
        ++number;
        if (!raw.empty() && raw.back() == '\r') raw.pop_back();
        const std::size_t first = raw.find_first_not_of(' ');
        if (first != std::string::npos && raw[first] == '\t')
            throw FormatError(source + ":" + std::to_string(number) +
                              ": a tab in indentation (YAML indents with spaces)");
        std::string content = without_comment(raw);
        while (!content.empty() && content.back() == ' ') content.pop_back();
        if (content.empty()) continue;
        if (content == "---" || content.rfind("--- ", 0) == 0) {
            if (!documents.back().empty()) documents.emplace_back();
            continue;
        }
        if (content == "...") continue;
        if (content[0] == '%') continue;  // a directive
        const std::size_t indent = content.find_first_not_of(' ');
        documents.back().push_back({static_cast<int>(indent), content.substr(indent), number});
        if (end == text.size()) break;
    }
    if (documents.back().empty() && documents.size() > 1) documents.pop_back();
    return documents;
}

// ---- from YAML nodes to entries -------------------------------------------------------------------

class EntryReader {
public:
    EntryReader(const YamlReader& yaml) : yaml_(yaml) {}

    PluginConfigEntry entry(const Node& document) {
        if (document.kind != Node::Kind::kMapping)
            yaml_.fail(document.line, "a plugin entry must be a mapping with name, op and instances");
        PluginConfigEntry entry;
        bool has_name = false;
        for (std::size_t m = 0; m < document.keys.size(); ++m) {
            const std::string& key = document.keys[m];
            const Node& value = document.items[m];
            if (key == "name") {
                entry.name = string(value, "name");
                has_name = true;
            } else if (key == "op") {
                entry.op = string(value, "op");
            } else if (key == "instances") {
                if (value.null) continue;
                if (value.kind != Node::Kind::kSequence) yaml_.fail(value.line, "'instances' must be a list");
                for (const Node& item : value.items) entry.instances.push_back(instance(item));
            } else {
                yaml_.fail(document.line, "unknown key '" + key + "' in a plugin entry (expected name, op, instances)");
            }
        }
        if (!has_name || entry.name.empty()) yaml_.fail(document.line, "a plugin entry without a 'name'");
        return entry;
    }

private:
    std::string string(const Node& node, const std::string& what) const {
        if (node.kind != Node::Kind::kScalar || node.null) yaml_.fail(node.line, "'" + what + "' must be a string");
        return node.scalar;
    }

    std::vector<std::string> strings(const Node& node, const std::string& what) const {
        if (node.null) return {};
        if (node.kind == Node::Kind::kScalar) return {node.scalar};
        if (node.kind != Node::Kind::kSequence) yaml_.fail(node.line, "'" + what + "' must be a list of tensor names");
        std::vector<std::string> names;
        for (const Node& item : node.items) names.push_back(string(item, what + "' item '"));
        return names;
    }

    PluginInstance instance(const Node& node) const {
        if (node.kind != Node::Kind::kMapping)
            yaml_.fail(node.line, "an instance must be a mapping with inputs, outputs and attributes");
        PluginInstance instance;
        for (std::size_t m = 0; m < node.keys.size(); ++m) {
            const std::string& key = node.keys[m];
            const Node& value = node.items[m];
            if (key == "inputs")
                instance.inputs = strings(value, "inputs");
            else if (key == "outputs")
                instance.outputs = strings(value, "outputs");
            else if (key == "attributes") {
                if (value.null) continue;
                if (value.kind != Node::Kind::kMapping) yaml_.fail(value.line, "'attributes' must be a mapping");
                for (std::size_t a = 0; a < value.keys.size(); ++a)
                    instance.attributes.emplace_back(value.keys[a], attribute_value(value.items[a], value.keys[a]));
            } else {
                yaml_.fail(node.line,
                           "unknown key '" + key + "' in an instance (expected inputs, outputs, attributes)");
            }
        }
        if (instance.inputs.empty() && instance.outputs.empty())
            yaml_.fail(node.line, "an instance without inputs and outputs");
        if (instance.outputs.empty()) yaml_.fail(node.line, "an instance without outputs");
        return instance;
    }

    static std::optional<std::variant<int64_t, double>> number(const Node& node) {
        if (node.kind != Node::Kind::kScalar || node.quoted || node.null) return std::nullopt;
        const std::string& text = node.scalar;
        if (std::regex_match(text, integer_pattern()))
            return static_cast<int64_t>(std::strtoll(text.c_str(), nullptr, 10));
        if (text == "true" || text == "True" || text == "TRUE") return int64_t{1};
        if (text == "false" || text == "False" || text == "FALSE") return int64_t{0};
        if (std::regex_match(text, float_pattern())) {
            std::string lower = text;
            for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (lower.find(".nan") != std::string::npos) return std::nan("");
            if (lower.find(".inf") != std::string::npos)
                return lower[0] == '-' ? -std::numeric_limits<double>::infinity()
                                       : std::numeric_limits<double>::infinity();
            return std::strtod(text.c_str(), nullptr);
        }
        return std::nullopt;
    }

    PatternValue attribute_value(const Node& node, const std::string& name) const {
        if (node.kind == Node::Kind::kMapping || node.null)
            yaml_.fail(node.line, "attribute '" + name + "' must be a number, a string or a list of them");
        if (node.kind == Node::Kind::kScalar) {
            if (auto value = number(node)) {
                if (const auto* integer = std::get_if<int64_t>(&*value)) return *integer;
                return std::get<double>(*value);
            }
            return node.scalar;
        }
        std::vector<int64_t> ints;
        std::vector<double> floats;
        std::vector<std::string> strings;
        bool any_float = false;
        for (const Node& item : node.items) {
            if (item.kind != Node::Kind::kScalar || item.null)
                yaml_.fail(item.line, "attribute '" + name + "' must be a list of numbers or of strings");
            if (auto value = number(item)) {
                if (!strings.empty()) yaml_.fail(item.line, "attribute '" + name + "' mixes numbers and strings");
                if (const auto* integer = std::get_if<int64_t>(&*value)) {
                    ints.push_back(*integer);
                    floats.push_back(static_cast<double>(*integer));
                } else {
                    floats.push_back(std::get<double>(*value));
                    any_float = true;
                }
            } else {
                if (!floats.empty()) yaml_.fail(item.line, "attribute '" + name + "' mixes numbers and strings");
                strings.push_back(item.scalar);
            }
        }
        if (!strings.empty()) return strings;
        if (any_float) return floats;
        return ints;
    }

    const YamlReader& yaml_;
};

}  // namespace

std::string plugin_config_to_yaml(const std::vector<PluginConfigEntry>& entries) {
    std::string out;
    for (std::size_t e = 0; e < entries.size(); ++e) {
        const PluginConfigEntry& entry = entries[e];
        if (e) out += "---\n";
        out += "name: " + yaml_string(entry.name) + "\n";
        out += "op: " + yaml_string(entry.op) + "\n";
        if (entry.instances.empty()) {
            out += "instances: []\n";
            continue;
        }
        out += "instances:\n";
        for (const PluginInstance& instance : entry.instances) {
            std::string block;
            write_value(block, "", "inputs", instance.inputs);
            write_value(block, "", "outputs", instance.outputs);
            if (instance.attributes.empty()) {
                block += "attributes: {}\n";
            } else {
                block += "attributes:\n";
                for (const auto& [name, value] : instance.attributes) write_value(block, "  ", name, value);
            }
            // The instance's mapping opens on the item's line ("- inputs:"); its other lines are indented by 2.
            bool first = true;
            std::size_t start = 0;
            while (start < block.size()) {
                const std::size_t end = block.find('\n', start);
                out += (first ? "- " : "  ") + block.substr(start, end - start) + "\n";
                first = false;
                start = end + 1;
            }
        }
    }
    return out;
}

std::vector<PluginConfigEntry> plugin_config_from_yaml(std::string_view text, const std::string& source) {
    std::vector<PluginConfigEntry> entries;
    for (auto& lines : split_documents(text, source)) {
        if (lines.empty()) continue;
        YamlReader reader(std::move(lines), source);
        const Node document = reader.document();
        if (document.null) continue;
        entries.push_back(EntryReader(reader).entry(document));
    }
    return entries;
}

}  // namespace polygraphy::tools
