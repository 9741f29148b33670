// JSON reading and writing without a DOM, compatible with Python's json module as Polygraphy uses it.
//
// Writer: streams to a FILE* (or a string) exactly what json.dump(obj, indent=4) writes: items on
// their own lines indented by 4 spaces per level, "," line ends, ": " after keys, "[]" and "{}"
// for empty containers, ASCII only (ensure_ascii: other characters as lowercase \uXXXX escapes),
// floats as Python's repr (1e-05, 0.0001, 2.0, 1e+16, NaN, Infinity, -Infinity), no final newline.
//
// Cursor: a pull parser over text held in memory (typically a read-only file mapping). Strings
// come back as views into the text unless they contain escapes (then they are decoded into a
// caller-provided buffer). Errors throw FormatError "<source>: <problem> at byte offset <N>".
// Accepts what Python's json.loads accepts: any whitespace, keys in any order, NaN / Infinity /
// -Infinity, \uXXXX escapes with surrogate pairs; plus a leading UTF-8 BOM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polygraphy/common/tensor.h"

namespace polygraphy::json {

/// A float as json.dumps writes it: python_float_repr() (common/python_repr.h), except that
/// non-finite values give NaN / Infinity / -Infinity.
std::string format_float(double value);

/// json.dumps(str) with ensure_ascii: the quoted, escaped string. `text` is UTF-8; invalid bytes
/// are written as \ufffd.
std::string quote(std::string_view text);

/// Streaming writer; see the file comment for the exact layout. Misuse (a value where a key is
/// due, unbalanced ends) throws InternalError. Write failures throw PolygraphyException.
class Writer {
public:
    /// Writes to `out` (buffered here; call finish() before closing the file).
    explicit Writer(std::FILE* out, int indent = 4);
    /// Appends to `*out`.
    explicit Writer(std::string* out, int indent = 4);
    ~Writer();
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    /// Structure: `{`, `}`, `[`, `]` with separators and indentation handled.
    /// @{
    Writer& begin_object();
    Writer& end_object();
    Writer& begin_array();
    Writer& end_array();
    /// @}
    /// The next member's key (objects only).
    Writer& key(std::string_view name);

    /// A value: string (escaped), number (Python's repr for doubles), bool, or null.
    /// @{
    Writer& value(std::string_view text);
    Writer& value(const char* text) { return value(std::string_view(text)); }
    Writer& value(const std::string& text) { return value(std::string_view(text)); }
    Writer& value(double number);
    Writer& value(int64_t number);
    Writer& value(int number) { return value(static_cast<int64_t>(number)); }
    Writer& value(uint64_t number);
    Writer& value(bool flag);
    Writer& null();
    /// @}

    /// A string value written in pieces, unescaped: the caller guarantees the characters need no
    /// escaping (printable ASCII other than '"' and '\\'), as base64 text does.
    Writer& begin_raw_string();
    /// Appends characters to the raw string.
    Writer& raw_string_chunk(const char* chars, std::size_t count);
    /// Closes the raw string.
    Writer& end_raw_string();

    /// Polygraphy's encoding of a numpy array: {"array": base64 of .npy, "polygraphy_class": "ndarray"},
    /// streamed (see npy.h for the dtypes that are widened).
    Writer& ndarray(const Tensor& tensor);

    /// Flushes buffered text to the FILE*; throws InternalError if containers are still open.
    void finish();

private:
    void before_value();
    void newline_indent();
    void put(std::string_view text);
    void flush_buffer();

    std::FILE* file_ = nullptr;
    std::string* string_ = nullptr;
    int indent_;
    std::string buffer_;
    struct Level {
        bool is_object;
        std::size_t count;
    };
    std::vector<Level> levels_;
    bool key_pending_ = false;
    bool in_raw_string_ = false;
    bool wrote_root_ = false;
};

/// Pull parser. Typical use:
///     cursor.begin_object();
///     std::string scratch;
///     while (auto key = cursor.next_key(scratch)) { if (*key == "lst") ... else cursor.skip_value(); }
class Cursor {
public:
    /// JSON value types.
    enum class Type { kObject, kArray, kString, kNumber, kBool, kNull };

    /// `source` names the text in error messages (a file path).
    Cursor(std::string_view text, std::string source);

    /// Type of the next value (skips whitespace). Throws at end of input or on a character that
    /// cannot start a value.
    Type peek();
    static const char* type_name(Type type);  ///< "an object", "a list", "a string"...

    /// Consumes '{' (throws, naming what was found instead, if the next value is not an object).
    void begin_object();
    /// Within an object: nullopt (after consuming '}') when there are no more members, else the key
    /// (a view into the text, or into `scratch` when it had escapes) with its ':' consumed.
    /// The view is valid until the next call that uses `scratch`.
    std::optional<std::string_view> next_key(std::string& scratch);

    /// Consumes '[' (throws, naming what was found instead, if the next value is not a list).
    void begin_array();
    /// Within a list: false (after consuming ']') when there are no more elements, else true with
    /// the separating ',' consumed; the caller then reads or skips exactly one value.
    bool next_element();

    /// The readers below throw FormatError ("expected a string but found a list") when the next
    /// value has another type. read_string's view is into the text, or into `scratch` if it had escapes.
    std::string_view read_string(std::string& scratch);
    /// A string value, copied.
    std::string read_string();
    /// A number value.
    double read_number();
    /// A true/false value.
    bool read_bool();
    /// Consumes `null` and returns true if it is next; false (consuming nothing) otherwise.
    bool read_null();
    /// Skips one value of any type (validating it; nesting deeper than 512 levels is refused).
    void skip_value();

    /// Fast path for huge strings (base64 arrays): consumes whitespace and the opening quote of the
    /// next value, which must be a string, and returns a pointer to its first character. The caller
    /// reads the characters itself and calls end_raw_string() with the position of the closing
    /// quote, or seek()s back to (returned pointer - 1) and uses read_string() instead.
    const char* begin_raw_string();
    /// Moves past `closing_quote`, which must be a '"' within the text (InternalError otherwise).
    void end_raw_string(const char* closing_quote);

    /// Checks that only whitespace remains.
    void expect_end();

    /// Byte offset of the read position in the text.
    std::size_t offset() const { return static_cast<std::size_t>(pos_ - begin_); }
    /// Read position in the text.
    const char* position() const { return pos_; }
    /// Moves to `pointer` (within the text); for callers that consumed part of it themselves.
    void seek(const char* pointer);
    /// Name of the text in error messages.
    const std::string& source() const { return source_; }
    /// The whole text.
    std::string_view text() const { return std::string_view(begin_, static_cast<std::size_t>(end_ - begin_)); }

    /// Throws FormatError "<source>: <problem> at byte offset <offset>".
    [[noreturn]] void fail(const std::string& problem) const;
    /// Same, at byte `offset`.
    [[noreturn]] void fail_at(std::size_t offset, const std::string& problem) const;

private:
    void skip_whitespace();
    bool at_container_end(char close);
    void skip_value_depth(int depth);

    const char* begin_;
    const char* end_;
    const char* pos_;
    std::string source_;
    std::vector<bool> first_;  ///< per open container: no member/element read yet
};

}  // namespace polygraphy::json
