#include "polygraphy/common/json.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/npy.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy::json {

// ---- formatting ---------------------------------------------------------------------------------

std::string format_float(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
    return python_float_repr(value);
}

namespace {

void append_escaped(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    auto escape_unit = [&](uint32_t unit) {
        out += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 0xf];
    };
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    out += '"';
    for (std::size_t i = 0; i < n;) {
        const unsigned c = s[i];
        if (c >= 0x20 && c < 0x7f) {
            if (c == '"' || c == '\\') out += '\\';
            out += static_cast<char>(c);
            ++i;
            continue;
        }
        if (c < 0x80) {
            switch (c) {
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default: escape_unit(c); break;
            }
            ++i;
            continue;
        }
        // A UTF-8 sequence: decode it (invalid bytes -> U+FFFD) and write UTF-16 escapes.
        std::size_t len = 0;
        uint32_t cp = 0, min = 0;
        if ((c & 0xe0) == 0xc0) len = 2, cp = c & 0x1f, min = 0x80;
        else if ((c & 0xf0) == 0xe0) len = 3, cp = c & 0x0f, min = 0x800;
        else if ((c & 0xf8) == 0xf0) len = 4, cp = c & 0x07, min = 0x10000;
        bool ok = len > 0 && i + len <= n;
        for (std::size_t k = 1; ok && k < len; ++k) {
            if ((s[i + k] & 0xc0) != 0x80) ok = false;
            else cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (!ok || cp < min || cp > 0x10ffff) {
            escape_unit(0xfffd);
            ++i;
            continue;
        }
        if (cp >= 0x10000) {
            cp -= 0x10000;
            escape_unit(0xd800 + (cp >> 10));
            escape_unit(0xdc00 + (cp & 0x3ff));
        } else {
            escape_unit(cp);
        }
        i += len;
    }
    out += '"';
}

}  // namespace

std::string quote(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    append_escaped(out, text);
    return out;
}

// ---- Writer -------------------------------------------------------------------------------------

namespace {
constexpr std::size_t kWriterBuffer = 1 << 16;
}

Writer::Writer(std::FILE* out, int indent) : file_(out), indent_(indent) { buffer_.reserve(kWriterBuffer); }

Writer::Writer(std::string* out, int indent) : string_(out), indent_(indent) {}

Writer::~Writer() {
    try {
        flush_buffer();
    } catch (...) {
        // Destructors must not throw; finish() reports write errors.
    }
}

void Writer::flush_buffer() {
    if (!file_ || buffer_.empty()) return;
    const std::size_t size = buffer_.size();
    const std::size_t written = std::fwrite(buffer_.data(), 1, size, file_);
    buffer_.clear();
    if (written != size) throw PolygraphyException(fmt::format("write failed: {}", std::strerror(errno)));
}

void Writer::put(std::string_view text) {
    if (string_) {
        string_->append(text);
        return;
    }
    if (buffer_.size() + text.size() <= kWriterBuffer) {
        buffer_.append(text);
        return;
    }
    flush_buffer();
    if (text.size() >= kWriterBuffer) {
        if (std::fwrite(text.data(), 1, text.size(), file_) != text.size())
            throw PolygraphyException(fmt::format("write failed: {}", std::strerror(errno)));
    } else {
        buffer_.append(text);
    }
}

void Writer::newline_indent() {
    if (indent_ < 0) return;
    put("\n");
    const std::size_t spaces = static_cast<std::size_t>(indent_) * levels_.size();
    static const std::string kSpaces(256, ' ');
    for (std::size_t left = spaces; left > 0;) {
        const std::size_t n = std::min(left, kSpaces.size());
        put(std::string_view(kSpaces.data(), n));
        left -= n;
    }
}

void Writer::before_value() {
    if (in_raw_string_) throw InternalError("json::Writer: value inside a raw string");
    if (levels_.empty()) {
        if (wrote_root_) throw InternalError("json::Writer: more than one top-level value");
        wrote_root_ = true;
        return;
    }
    Level& level = levels_.back();
    if (level.is_object) {
        if (!key_pending_) throw InternalError("json::Writer: object member without a key");
        key_pending_ = false;
        return;
    }
    if (level.count > 0) put(indent_ < 0 ? ", " : ",");
    ++level.count;
    newline_indent();
}

Writer& Writer::key(std::string_view name) {
    if (levels_.empty() || !levels_.back().is_object || key_pending_ || in_raw_string_)
        throw InternalError("json::Writer: key outside an object");
    Level& level = levels_.back();
    if (level.count > 0) put(indent_ < 0 ? ", " : ",");
    ++level.count;
    newline_indent();
    std::string quoted;
    append_escaped(quoted, name);
    put(quoted);
    put(": ");
    key_pending_ = true;
    return *this;
}

Writer& Writer::begin_object() {
    before_value();
    put("{");
    levels_.push_back({true, 0});
    return *this;
}

Writer& Writer::begin_array() {
    before_value();
    put("[");
    levels_.push_back({false, 0});
    return *this;
}

Writer& Writer::end_object() {
    if (levels_.empty() || !levels_.back().is_object || key_pending_ || in_raw_string_)
        throw InternalError("json::Writer: unbalanced end_object");
    const std::size_t count = levels_.back().count;
    levels_.pop_back();
    if (count > 0) newline_indent();
    put("}");
    return *this;
}

Writer& Writer::end_array() {
    if (levels_.empty() || levels_.back().is_object || in_raw_string_)
        throw InternalError("json::Writer: unbalanced end_array");
    const std::size_t count = levels_.back().count;
    levels_.pop_back();
    if (count > 0) newline_indent();
    put("]");
    return *this;
}

Writer& Writer::value(std::string_view text) {
    before_value();
    std::string quoted;
    append_escaped(quoted, text);
    put(quoted);
    return *this;
}

Writer& Writer::value(double number) {
    before_value();
    put(format_float(number));
    return *this;
}

Writer& Writer::value(int64_t number) {
    before_value();
    put(fmt::format("{}", number));
    return *this;
}

Writer& Writer::value(uint64_t number) {
    before_value();
    put(fmt::format("{}", number));
    return *this;
}

Writer& Writer::value(bool flag) {
    before_value();
    put(flag ? "true" : "false");
    return *this;
}

Writer& Writer::null() {
    before_value();
    put("null");
    return *this;
}

Writer& Writer::begin_raw_string() {
    before_value();
    put("\"");
    in_raw_string_ = true;
    return *this;
}

Writer& Writer::raw_string_chunk(const char* chars, std::size_t count) {
    if (!in_raw_string_) throw InternalError("json::Writer: raw_string_chunk outside a raw string");
    put(std::string_view(chars, count));
    return *this;
}

Writer& Writer::end_raw_string() {
    if (!in_raw_string_) throw InternalError("json::Writer: end_raw_string without begin_raw_string");
    in_raw_string_ = false;
    put("\"");
    return *this;
}

Writer& Writer::ndarray(const Tensor& tensor) {
    begin_object();
    key("array");
    begin_raw_string();
    npy::save_base64(tensor, [this](const char* chars, std::size_t count) { raw_string_chunk(chars, count); });
    end_raw_string();
    key("polygraphy_class");
    value("ndarray");
    return end_object();
}

void Writer::finish() {
    if (!levels_.empty() || in_raw_string_) throw InternalError("json::Writer: finish with open containers");
    flush_buffer();
}

// ---- Cursor -------------------------------------------------------------------------------------

namespace {

constexpr int kMaxDepth = 512;

std::string describe_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && u != '\'') return fmt::format("'{}'", c);
    return fmt::format("byte 0x{:02x}", u);
}

}  // namespace

Cursor::Cursor(std::string_view text, std::string source)
    : begin_(text.data()), end_(text.data() + text.size()), pos_(text.data()), source_(std::move(source)) {
    if (text.size() >= 3 && std::memcmp(begin_, "\xef\xbb\xbf", 3) == 0) pos_ += 3;
}

void Cursor::fail(const std::string& problem) const { fail_at(offset(), problem); }

void Cursor::fail_at(std::size_t offset, const std::string& problem) const {
    throw FormatError(fmt::format("{}: {} at byte offset {}", source_, problem, offset));
}

void Cursor::skip_whitespace() {
    while (pos_ < end_ && (*pos_ == ' ' || *pos_ == '\n' || *pos_ == '\r' || *pos_ == '\t')) ++pos_;
}

const char* Cursor::type_name(Type type) {
    switch (type) {
        case Type::kObject: return "an object";
        case Type::kArray: return "a list";
        case Type::kString: return "a string";
        case Type::kNumber: return "a number";
        case Type::kBool: return "a boolean";
        case Type::kNull: return "null";
    }
    return "a value";
}

Cursor::Type Cursor::peek() {
    skip_whitespace();
    if (pos_ >= end_) fail("invalid JSON: unexpected end of file, expected a value (truncated file?)");
    switch (*pos_) {
        case '{': return Type::kObject;
        case '[': return Type::kArray;
        case '"': return Type::kString;
        case 't':
        case 'f': return Type::kBool;
        case 'n': return Type::kNull;
        case '-':
        case 'N':
        case 'I': return Type::kNumber;
        default:
            if (*pos_ >= '0' && *pos_ <= '9') return Type::kNumber;
            fail(fmt::format("invalid JSON: expected a value but found {}", describe_char(*pos_)));
    }
}

void Cursor::begin_object() {
    const Type type = peek();
    if (type != Type::kObject) fail(fmt::format("expected an object but found {}", type_name(type)));
    ++pos_;
    first_.push_back(true);
}

void Cursor::begin_array() {
    const Type type = peek();
    if (type != Type::kArray) fail(fmt::format("expected a list but found {}", type_name(type)));
    ++pos_;
    first_.push_back(true);
}

bool Cursor::at_container_end(char close) {
    if (first_.empty()) throw InternalError("json::Cursor: no open container");
    skip_whitespace();
    if (pos_ >= end_) fail(fmt::format("invalid JSON: unexpected end of file, expected '{}' (truncated file?)", close));
    if (*pos_ == close) {
        ++pos_;
        first_.pop_back();
        return true;
    }
    if (!first_.back()) {
        if (*pos_ != ',')
            fail(fmt::format("invalid JSON: expected ',' or '{}' but found {}", close, describe_char(*pos_)));
        ++pos_;
        skip_whitespace();
    }
    first_.back() = false;
    return false;
}

std::optional<std::string_view> Cursor::next_key(std::string& scratch) {
    if (at_container_end('}')) return std::nullopt;
    if (pos_ >= end_) fail("invalid JSON: unexpected end of file, expected a key (truncated file?)");
    if (*pos_ != '"') fail(fmt::format("invalid JSON: expected a string key but found {}", describe_char(*pos_)));
    const std::string_view key = read_string(scratch);
    skip_whitespace();
    if (pos_ >= end_) fail("invalid JSON: unexpected end of file, expected ':' (truncated file?)");
    if (*pos_ != ':') fail(fmt::format("invalid JSON: expected ':' after a key but found {}", describe_char(*pos_)));
    ++pos_;
    return key;
}

bool Cursor::next_element() { return !at_container_end(']'); }

std::string_view Cursor::read_string(std::string& scratch) {
    const Type type = peek();
    if (type != Type::kString) fail(fmt::format("expected a string but found {}", type_name(type)));
    const char* const open = pos_;
    const char* start = ++pos_;
    // Fast scan: most strings have no escapes.
    while (pos_ < end_) {
        const auto c = static_cast<unsigned char>(*pos_);
        if (c == '"') {
            const std::string_view view(start, static_cast<std::size_t>(pos_ - start));
            ++pos_;
            return view;
        }
        if (c == '\\') break;
        if (c < 0x20) fail(fmt::format("invalid JSON: control character {} in a string", describe_char(*pos_)));
        ++pos_;
    }
    if (pos_ >= end_) fail_at(static_cast<std::size_t>(open - begin_), "invalid JSON: unterminated string (truncated file?)");
    // Slow path: decode escapes into scratch.
    scratch.assign(start, pos_);
    auto append_utf8 = [&](uint32_t cp) {
        if (cp < 0x80) {
            scratch += static_cast<char>(cp);
        } else if (cp < 0x800) {
            scratch += static_cast<char>(0xc0 | (cp >> 6));
            scratch += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            scratch += static_cast<char>(0xe0 | (cp >> 12));
            scratch += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            scratch += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
            scratch += static_cast<char>(0xf0 | (cp >> 18));
            scratch += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
            scratch += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            scratch += static_cast<char>(0x80 | (cp & 0x3f));
        }
    };
    auto read_hex4 = [&]() -> uint32_t {
        if (end_ - pos_ < 4) fail("invalid JSON: truncated \\u escape");
        uint32_t unit = 0;
        for (int i = 0; i < 4; ++i) {
            const char h = *pos_;
            unit <<= 4;
            if (h >= '0' && h <= '9') unit |= static_cast<uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f') unit |= static_cast<uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') unit |= static_cast<uint32_t>(h - 'A' + 10);
            else fail("invalid JSON: bad \\u escape");
            ++pos_;
        }
        return unit;
    };
    while (true) {
        if (pos_ >= end_) fail_at(static_cast<std::size_t>(open - begin_), "invalid JSON: unterminated string (truncated file?)");
        const auto c = static_cast<unsigned char>(*pos_);
        if (c == '"') {
            ++pos_;
            return scratch;
        }
        if (c < 0x20) fail(fmt::format("invalid JSON: control character {} in a string", describe_char(*pos_)));
        if (c != '\\') {
            scratch += static_cast<char>(c);
            ++pos_;
            continue;
        }
        ++pos_;
        if (pos_ >= end_) fail_at(static_cast<std::size_t>(open - begin_), "invalid JSON: unterminated string (truncated file?)");
        const char e = *pos_++;
        switch (e) {
            case '"': scratch += '"'; break;
            case '\\': scratch += '\\'; break;
            case '/': scratch += '/'; break;
            case 'b': scratch += '\b'; break;
            case 'f': scratch += '\f'; break;
            case 'n': scratch += '\n'; break;
            case 'r': scratch += '\r'; break;
            case 't': scratch += '\t'; break;
            case 'u': {
                uint32_t unit = read_hex4();
                if (unit >= 0xd800 && unit < 0xdc00 && end_ - pos_ >= 6 && pos_[0] == '\\' && pos_[1] == 'u') {
                    const char* save = pos_;
                    pos_ += 2;
                    const uint32_t low = read_hex4();
                    if (low >= 0xdc00 && low < 0xe000) {
                        unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
                    } else {
                        pos_ = save;  // lone high surrogate; the next escape stands alone
                    }
                }
                append_utf8(unit);
                break;
            }
            default:
                --pos_;
                fail(fmt::format("invalid JSON: invalid escape '\\{}'", e));
        }
    }
}

std::string Cursor::read_string() {
    std::string scratch;
    const std::string_view view = read_string(scratch);
    if (view.data() == scratch.data()) return scratch;
    return std::string(view);
}

double Cursor::read_number() {
    const Type type = peek();
    if (type != Type::kNumber) fail(fmt::format("expected a number but found {}", type_name(type)));
    const char* start = pos_;
    auto literal = [&](std::string_view word) {
        if (static_cast<std::size_t>(end_ - pos_) >= word.size() && std::string_view(pos_, word.size()) == word) {
            pos_ += word.size();
            return true;
        }
        return false;
    };
    if (literal("NaN")) return std::numeric_limits<double>::quiet_NaN();
    if (literal("Infinity")) return std::numeric_limits<double>::infinity();
    if (literal("-Infinity")) return -std::numeric_limits<double>::infinity();
    auto digits = [&]() {
        const char* from = pos_;
        while (pos_ < end_ && *pos_ >= '0' && *pos_ <= '9') ++pos_;
        return pos_ > from;
    };
    if (pos_ < end_ && *pos_ == '-') ++pos_;
    if (pos_ < end_ && *pos_ == '0') {
        ++pos_;
    } else if (!digits()) {
        fail("invalid JSON: malformed number");
    }
    if (pos_ < end_ && *pos_ == '.') {
        ++pos_;
        if (!digits()) fail("invalid JSON: malformed number (no digits after '.')");
    }
    if (pos_ < end_ && (*pos_ == 'e' || *pos_ == 'E')) {
        ++pos_;
        if (pos_ < end_ && (*pos_ == '+' || *pos_ == '-')) ++pos_;
        if (!digits()) fail("invalid JSON: malformed number (no digits in the exponent)");
    }
    double value = 0;
    const auto result = std::from_chars(start, pos_, value);
    if (result.ec == std::errc::result_out_of_range) {
        // Python gives inf for huge values and 0 for tiny ones; strtod does the same.
        value = std::strtod(std::string(start, pos_).c_str(), nullptr);
    } else if (result.ec != std::errc() || result.ptr != pos_) {
        pos_ = start;
        fail("invalid JSON: malformed number");
    }
    return value;
}

bool Cursor::read_bool() {
    const Type type = peek();
    if (type != Type::kBool) fail(fmt::format("expected a boolean but found {}", type_name(type)));
    if (end_ - pos_ >= 4 && std::string_view(pos_, 4) == "true") {
        pos_ += 4;
        return true;
    }
    if (end_ - pos_ >= 5 && std::string_view(pos_, 5) == "false") {
        pos_ += 5;
        return false;
    }
    fail("invalid JSON: invalid literal");
}

bool Cursor::read_null() {
    if (peek() != Type::kNull) return false;
    if (end_ - pos_ >= 4 && std::string_view(pos_, 4) == "null") {
        pos_ += 4;
        return true;
    }
    fail("invalid JSON: invalid literal");
}

void Cursor::skip_value() { skip_value_depth(0); }

void Cursor::skip_value_depth(int depth) {
    if (depth > kMaxDepth) fail(fmt::format("invalid JSON: nesting deeper than {} levels", kMaxDepth));
    std::string scratch;
    switch (peek()) {
        case Type::kObject:
            begin_object();
            while (next_key(scratch)) skip_value_depth(depth + 1);
            break;
        case Type::kArray:
            begin_array();
            while (next_element()) skip_value_depth(depth + 1);
            break;
        case Type::kString: read_string(scratch); break;
        case Type::kNumber: read_number(); break;
        case Type::kBool: read_bool(); break;
        case Type::kNull: read_null(); break;
    }
}

const char* Cursor::begin_raw_string() {
    const Type type = peek();
    if (type != Type::kString) fail(fmt::format("expected a string but found {}", type_name(type)));
    return ++pos_;
}

void Cursor::end_raw_string(const char* closing_quote) {
    if (closing_quote < pos_ || closing_quote >= end_ || *closing_quote != '"')
        throw InternalError("json::Cursor::end_raw_string: not at a closing quote");
    pos_ = closing_quote + 1;
}

void Cursor::seek(const char* pointer) {
    if (pointer < begin_ || pointer > end_) throw InternalError("json::Cursor::seek out of range");
    pos_ = pointer;
}

void Cursor::expect_end() {
    skip_whitespace();
    if (pos_ != end_) fail(fmt::format("invalid JSON: unexpected data after the end of the document ({})", describe_char(*pos_)));
}

}  // namespace polygraphy::json
