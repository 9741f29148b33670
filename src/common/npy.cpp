#include "polygraphy/common/npy.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/aligned_memory.h"
#include "polygraphy/common/base64.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::npy {
namespace {

// Tensors hold little-endian data and are decoded in place; a big-endian host would need swaps.
static_assert(std::endian::native == std::endian::little, "npy.cpp assumes a little-endian host");

constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kMagicSize = sizeof(kMagic);
constexpr std::size_t kMaxRank = 64;
constexpr std::size_t kArrayAlign = 64;
constexpr std::size_t kGrowthAxisMaxDigits = 21;  // numpy's spare room for the first axis

[[noreturn]] void fail(const std::string& problem) { throw FormatError("invalid .npy data: " + problem); }

// ---- element layout ----------------------------------------------------------------------------

struct Layout {
    DataType dtype = DataType::kUndefined;  ///< tensor dtype (kString for 'U' and 'S')
    char kind = 0;                          ///< numpy kind: f i u b c U S
    bool swap = false;                      ///< big-endian multi-byte data
    bool fortran = false;
    std::size_t item_size = 0;  ///< bytes per element in the file
    Shape shape;
    std::size_t volume = 0;
    std::size_t data_bytes = 0;

    bool direct() const { return !swap && !fortran && kind != 'U' && kind != 'S'; }
};

DataType numeric_dtype(char kind, std::size_t size) {
    switch (kind) {
        case 'f':
            if (size == 2) return DataType::kFloat16;
            if (size == 4) return DataType::kFloat32;
            if (size == 8) return DataType::kFloat64;
            break;
        case 'i':
            if (size == 1) return DataType::kInt8;
            if (size == 2) return DataType::kInt16;
            if (size == 4) return DataType::kInt32;
            if (size == 8) return DataType::kInt64;
            break;
        case 'u':
            if (size == 1) return DataType::kUInt8;
            if (size == 2) return DataType::kUInt16;
            if (size == 4) return DataType::kUInt32;
            if (size == 8) return DataType::kUInt64;
            break;
        case 'b':
            if (size == 1) return DataType::kBool;
            break;
        case 'c':
            if (size == 8) return DataType::kComplex64;
            if (size == 16) return DataType::kComplex128;
            break;
        default:
            break;
    }
    return DataType::kUndefined;
}

// Parses a descr such as '<f4', '>i8', '|b1', '<U12', '|S5'.
void parse_descr(std::string_view descr, Layout& layout) {
    auto unsupported = [&](const char* why) {
        fail(fmt::format("unsupported dtype descr '{}'{}", descr, why));
    };
    if (descr.size() < 2) unsupported("");
    const char order = descr[0];
    if (order != '<' && order != '>' && order != '|' && order != '=') unsupported("");
    const char kind = descr[1];
    if (kind == 'O') unsupported(" (object arrays need pickle, which is not allowed)");
    std::size_t size = 0;
    if (descr.size() == 2 || descr.size() > 2 + 10) unsupported("");
    for (std::size_t i = 2; i < descr.size(); ++i) {
        if (descr[i] < '0' || descr[i] > '9') unsupported("");
        size = size * 10 + static_cast<std::size_t>(descr[i] - '0');
    }
    layout.kind = kind;
    if (kind == 'U' || kind == 'S') {
        if (size == 0) unsupported(" (zero-length strings)");
        layout.dtype = DataType::kString;
        layout.item_size = kind == 'U' ? size * 4 : size;
        layout.swap = kind == 'U' && order == '>';
        return;
    }
    layout.dtype = numeric_dtype(kind, size);
    if (layout.dtype == DataType::kUndefined) unsupported("");
    layout.item_size = size;
    layout.swap = order == '>' && size > 1;
}

// ---- header dict: a Python literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }

class HeaderParser {
public:
    explicit HeaderParser(std::string_view text) : text_(text) {}

    void parse(Layout& layout) {
        bool have_descr = false, have_order = false, have_shape = false;
        std::string descr;
        skip_space();
        expect('{');
        while (true) {
            skip_space();
            if (peek() == '}') {
                ++pos_;
                break;
            }
            const std::string key = parse_string();
            skip_space();
            expect(':');
            skip_space();
            if (key == "descr") {
                if (peek() == '[') fail("structured dtypes are not supported");
                descr = parse_string();
                have_descr = true;
            } else if (key == "fortran_order") {
                layout.fortran = parse_bool();
                have_order = true;
            } else if (key == "shape") {
                layout.shape = parse_shape();
                have_shape = true;
            } else {
                fail(fmt::format("header has an unexpected key '{}'", key));
            }
            skip_space();
            if (peek() == ',') {
                ++pos_;
            } else if (peek() != '}') {
                fail(fmt::format("malformed header: expected ',' or '}}' at header offset {}", pos_));
            }
        }
        skip_space();
        if (pos_ != text_.size()) fail(fmt::format("malformed header: unexpected text after '}}' at header offset {}", pos_));
        if (!have_descr || !have_order || !have_shape)
            fail("header lacks one of the keys 'descr', 'fortran_order', 'shape'");
        parse_descr(descr, layout);
    }

private:
    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' ||
                                       text_[pos_] == '\r' || text_[pos_] == '\0'))
            ++pos_;
    }
    void expect(char c) {
        if (peek() != c) fail(fmt::format("malformed header: expected '{}' at header offset {}", c, pos_));
        ++pos_;
    }
    std::string parse_string() {
        const char quote = peek();
        if (quote != '\'' && quote != '"')
            fail(fmt::format("malformed header: expected a quoted string at header offset {}", pos_));
        const std::size_t start = ++pos_;
        while (pos_ < text_.size() && text_[pos_] != quote) {
            if (text_[pos_] == '\\') fail("malformed header: escapes in strings are not supported");
            ++pos_;
        }
        if (pos_ >= text_.size()) fail("malformed header: unterminated string");
        return std::string(text_.substr(start, pos_++ - start));
    }
    bool parse_bool() {
        if (text_.substr(pos_, 4) == "True") {
            pos_ += 4;
            return true;
        }
        if (text_.substr(pos_, 5) == "False") {
            pos_ += 5;
            return false;
        }
        fail(fmt::format("malformed header: fortran_order must be True or False (header offset {})", pos_));
    }
    Shape parse_shape() {
        Shape shape;
        expect('(');
        while (true) {
            skip_space();
            if (peek() == ')') {
                ++pos_;
                break;
            }
            if (peek() < '0' || peek() > '9')
                fail(fmt::format("bad shape: expected a non-negative integer at header offset {}", pos_));
            int64_t dim = 0;
            while (peek() >= '0' && peek() <= '9') {
                const int digit = peek() - '0';
                if (dim > (std::numeric_limits<int64_t>::max() - digit) / 10)
                    fail("bad shape: dimension too large");
                dim = dim * 10 + digit;
                ++pos_;
            }
            if (peek() == 'L') ++pos_;  // Python 2 longs
            if (shape.size() >= kMaxRank) fail(fmt::format("bad shape: more than {} dimensions", kMaxRank));
            shape.push_back(dim);
            skip_space();
            if (peek() == ',') {
                ++pos_;
            } else if (peek() != ')') {
                fail(fmt::format("bad shape: expected ',' or ')' at header offset {}", pos_));
            }
        }
        return shape;
    }

    std::string_view text_;
    std::size_t pos_ = 0;
};

// Size of magic + version + length + header dict, from the first bytes (at least 12 or all there are).
std::size_t header_total_size(const uint8_t* p, std::size_t available, std::size_t total) {
    if (std::memcmp(p, kMagic, std::min(available, kMagicSize)) != 0)
        fail("bad magic string (not a .npy file)");
    if (total < kMagicSize + 4) fail(fmt::format("truncated: {} bytes is too short for a .npy header", total));
    const unsigned major = p[6], minor = p[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        fail(fmt::format("unsupported format version {}.{} (1.0, 2.0 and 3.0 are supported)", major, minor));
    if (major == 1) return 10 + (std::size_t{p[8]} | std::size_t{p[9]} << 8);
    if (total < 12) fail(fmt::format("truncated: {} bytes is too short for a .npy header", total));
    return 12 + (std::size_t{p[8]} | std::size_t{p[9]} << 8 | std::size_t{p[10]} << 16 | std::size_t{p[11]} << 24);
}

// Parses the dict and checks the shape against the bytes that follow the header.
// With check_total false, `total` is ignored (used to size a payload that is not yet known).
Layout parse_layout(const uint8_t* header, std::size_t header_total, std::size_t total, bool check_total = true) {
    const std::size_t dict_start = header[6] == 1 ? 10 : 12;
    Layout layout;
    HeaderParser(std::string_view(reinterpret_cast<const char*>(header) + dict_start, header_total - dict_start))
        .parse(layout);
    std::size_t volume = 1;
    bool overflow = false;
    for (int64_t dim : layout.shape) {
        if (dim == 0) {
            volume = 0;
            overflow = false;
            break;
        }
        if (!overflow && __builtin_mul_overflow(volume, static_cast<std::size_t>(dim), &volume)) overflow = true;
    }
    std::size_t data_bytes = 0;
    if (overflow || __builtin_mul_overflow(volume, layout.item_size, &data_bytes) ||
        volume > static_cast<std::size_t>(std::numeric_limits<int64_t>::max()))
        fail(fmt::format("shape {} is too large", shape_to_string(layout.shape)));
    layout.volume = volume;
    layout.data_bytes = data_bytes;
    if (!check_total) return layout;
    const std::size_t available = total - header_total;
    if (available != data_bytes) {
        fail(fmt::format("array data is {} than its shape needs: {} bytes for shape {} of {}-byte elements '{}', "
                         "but {} bytes follow the header",
                         available < data_bytes ? "shorter" : "longer", data_bytes, shape_to_string(layout.shape),
                         layout.item_size, layout.kind, available));
    }
    return layout;
}

// ---- buffers ------------------------------------------------------------------------------------

// A buffer for Tensor::wrap (allocate_aligned: large arrays get huge pages, so decoding takes a few
// dozen page faults instead of thousands).
std::shared_ptr<void> allocate(std::size_t nbytes) {
    auto data = allocate_aligned(nbytes);
    if (!data) throw PolygraphyException(fmt::format("out of memory: cannot allocate {} bytes for an array", nbytes));
    return data;
}

void byteswap_in_place(uint8_t* data, std::size_t count, std::size_t width) {
    for (std::size_t i = 0; i < count; ++i, data += width) std::reverse(data, data + width);
}

// Fortran (column-major) element order -> C (row-major) order.
void fortran_to_c(const uint8_t* src, uint8_t* dst, const Shape& shape, std::size_t item) {
    const std::size_t rank = shape.size();
    std::size_t volume = 1;
    for (int64_t d : shape) volume *= static_cast<std::size_t>(d);
    if (volume == 0) return;
    std::vector<std::size_t> stride(rank);  // Fortran strides, in elements
    std::size_t s = 1;
    for (std::size_t i = 0; i < rank; ++i) {
        stride[i] = s;
        s *= static_cast<std::size_t>(shape[i]);
    }
    std::vector<std::size_t> index(rank, 0);
    std::size_t offset = 0;
    for (std::size_t n = 0; n < volume; ++n) {
        std::memcpy(dst + n * item, src + offset * item, item);
        // Increment the C-order index (last axis fastest), tracking the Fortran offset.
        for (std::size_t axis = rank; axis-- > 0;) {
            if (++index[axis] < static_cast<std::size_t>(shape[axis])) {
                offset += stride[axis];
                break;
            }
            offset -= stride[axis] * (index[axis] - 1);
            index[axis] = 0;
        }
    }
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

// UTF-8 -> code points; invalid sequences become U+FFFD.
void utf8_to_code_points(std::string_view text, std::vector<uint32_t>& out) {
    out.clear();
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n;) {
        const unsigned c = s[i];
        std::size_t len = 0;
        uint32_t cp = 0, min = 0;
        if (c < 0x80) {
            out.push_back(c);
            ++i;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        }
        bool ok = len > 0 && i + len <= n;
        for (std::size_t k = 1; ok && k < len; ++k) {
            if ((s[i + k] & 0xc0) != 0x80) ok = false;
            else cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (ok && (cp < min || cp > 0x10ffff)) ok = false;
        if (!ok) {
            out.push_back(0xfffd);
            ++i;
        } else {
            out.push_back(cp);
            i += len;
        }
    }
}

Tensor strings_from_raw(const Layout& layout, const uint8_t* raw) {
    Tensor tensor(DataType::kString, layout.shape);
    auto& strings = tensor.strings();
    if (layout.kind == 'S') {
        for (std::size_t i = 0; i < layout.volume; ++i) {
            const auto* item = reinterpret_cast<const char*>(raw + i * layout.item_size);
            std::size_t len = layout.item_size;
            while (len > 0 && item[len - 1] == '\0') --len;
            strings[i].assign(item, len);
        }
        return tensor;
    }
    const std::size_t chars = layout.item_size / 4;
    for (std::size_t i = 0; i < layout.volume; ++i) {
        const uint8_t* item = raw + i * layout.item_size;
        std::size_t len = chars;
        auto code_point = [&](std::size_t k) {
            const uint8_t* b = item + 4 * k;
            return layout.swap ? (uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3])
                               : (uint32_t{b[3]} << 24 | uint32_t{b[2]} << 16 | uint32_t{b[1]} << 8 | b[0]);
        };
        while (len > 0 && code_point(len - 1) == 0) --len;
        std::string& text = strings[i];
        text.clear();
        for (std::size_t k = 0; k < len; ++k) {
            const uint32_t cp = code_point(k);
            if (cp > 0x10ffff) fail(fmt::format("invalid UTF-32 code point 0x{:x} in element {}", cp, i));
            append_utf8(text, cp);
        }
    }
    return tensor;
}

// Turns the raw data bytes (in file order) into a tensor; `raw` may be modified.
Tensor tensor_from_raw(const Layout& layout, uint8_t* raw) {
    std::unique_ptr<uint8_t[]> c_order;
    if (layout.fortran && layout.shape.size() > 1 && layout.volume > 1) {
        c_order.reset(new uint8_t[layout.data_bytes]);
        fortran_to_c(raw, c_order.get(), layout.shape, layout.item_size);
        raw = c_order.get();
    }
    if (layout.dtype == DataType::kString) return strings_from_raw(layout, raw);
    if (layout.swap) {
        const std::size_t width = layout.kind == 'c' ? layout.item_size / 2 : layout.item_size;
        byteswap_in_place(raw, layout.data_bytes / width, width);
    }
    auto owner = allocate(layout.data_bytes);
    if (layout.data_bytes > 0) std::memcpy(owner.get(), raw, layout.data_bytes);
    return Tensor::wrap(layout.dtype, layout.shape, owner, owner.get());
}

void normalize_bools(Tensor& tensor) {
    if (tensor.dtype() != DataType::kBool) return;
    auto* bytes = static_cast<uint8_t*>(tensor.data());
    for (int64_t i = 0; i < tensor.numel(); ++i) bytes[i] = bytes[i] != 0;
}

// ---- float8 -------------------------------------------------------------------------------------

float float8_to_float(uint8_t bits, DataType dtype) {
    const bool negative = bits & 0x80;
    int exponent_bits, bias;
    bool ieee_specials = false, fnuz = false;
    switch (dtype) {
        case DataType::kFloat8E4M3FN: exponent_bits = 4, bias = 7; break;
        case DataType::kFloat8E4M3FNUZ: exponent_bits = 4, bias = 8, fnuz = true; break;
        case DataType::kFloat8E5M2: exponent_bits = 5, bias = 15, ieee_specials = true; break;
        default: exponent_bits = 5, bias = 16, fnuz = true; break;  // kFloat8E5M2FNUZ
    }
    const int mantissa_bits = 7 - exponent_bits;
    const int exponent = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1);
    const int mantissa = bits & ((1 << mantissa_bits) - 1);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    if (fnuz && bits == 0x80) return nan;
    if (ieee_specials && exponent == 0x1f) {
        if (mantissa != 0) return nan;
        return negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    }
    if (dtype == DataType::kFloat8E4M3FN && (bits & 0x7f) == 0x7f) return nan;
    float magnitude;
    if (exponent == 0) {
        magnitude = std::ldexp(static_cast<float>(mantissa), 1 - bias - mantissa_bits);
    } else {
        magnitude = std::ldexp(static_cast<float>(mantissa | (1 << mantissa_bits)), exponent - bias - mantissa_bits);
    }
    return negative ? -magnitude : magnitude;
}

bool is_float8(DataType dtype) {
    return dtype == DataType::kFloat8E4M3FN || dtype == DataType::kFloat8E4M3FNUZ ||
           dtype == DataType::kFloat8E5M2 || dtype == DataType::kFloat8E5M2FNUZ;
}

std::string descr_for(DataType dtype, std::size_t string_length) {
    switch (dtype) {
        case DataType::kFloat32: return "<f4";
        case DataType::kFloat64: return "<f8";
        case DataType::kFloat16: return "<f2";
        case DataType::kInt8: return "|i1";
        case DataType::kInt16: return "<i2";
        case DataType::kInt32: return "<i4";
        case DataType::kInt64: return "<i8";
        case DataType::kUInt8: return "|u1";
        case DataType::kUInt16: return "<u2";
        case DataType::kUInt32: return "<u4";
        case DataType::kUInt64: return "<u8";
        case DataType::kBool: return "|b1";
        case DataType::kComplex64: return "<c8";
        case DataType::kComplex128: return "<c16";
        case DataType::kString: return fmt::format("<U{}", std::max<std::size_t>(string_length, 1));
        default: break;
    }
    throw UnsupportedError(fmt::format("cannot write a {} array to .npy", dtype_name(dtype)));
}

std::string python_shape(const Shape& shape) {
    if (shape.size() == 1) return fmt::format("({},)", shape[0]);
    return fmt::format("({})", fmt::join(shape, ", "));
}

}  // namespace

// ---- public API ---------------------------------------------------------------------------------

DataType npy_write_dtype(DataType dtype) {
    if (dtype == DataType::kBFloat16 || is_float8(dtype)) return DataType::kFloat32;
    if (dtype == DataType::kInt4) return DataType::kInt8;
    if (dtype == DataType::kUInt4) return DataType::kUInt8;
    return dtype;
}

std::string make_header(DataType dtype, const Shape& shape, std::size_t string_length) {
    std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   descr_for(dtype, string_length), python_shape(shape));
    if (!shape.empty()) {
        const std::size_t digits = fmt::formatted_size("{}", shape[0]);
        if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
    }
    const std::size_t hlen = dict.size() + 1;  // with the final '\n'
    std::size_t prefix = 10;
    std::size_t padding = kArrayAlign - (prefix + hlen) % kArrayAlign;
    if (hlen + padding > 0xffff) {  // numpy switches to format 2.0 (4-byte length)
        prefix = 12;
        padding = kArrayAlign - (prefix + hlen) % kArrayAlign;
    }
    const std::size_t length = hlen + padding;
    std::string header(reinterpret_cast<const char*>(kMagic), kMagicSize);
    header += static_cast<char>(prefix == 10 ? 1 : 2);
    header += '\0';
    header += static_cast<char>(length & 0xff);
    header += static_cast<char>((length >> 8) & 0xff);
    if (prefix == 12) {
        header += static_cast<char>((length >> 16) & 0xff);
        header += static_cast<char>((length >> 24) & 0xff);
    }
    header += dict;
    header.append(padding, ' ');
    header += '\n';
    return header;
}

void save_to(const Tensor& tensor, const ByteSink& sink) {
    if (!tensor.defined()) throw UnsupportedError("cannot write an undefined tensor to .npy");
    const DataType source = tensor.dtype();
    const DataType target = npy_write_dtype(source);
    const auto count = static_cast<std::size_t>(tensor.numel());

    if (source == DataType::kString) {
        const auto& strings = tensor.strings();
        std::vector<std::vector<uint32_t>> code_points(strings.size());
        std::size_t longest = 1;
        for (std::size_t i = 0; i < strings.size(); ++i) {
            utf8_to_code_points(strings[i], code_points[i]);
            longest = std::max(longest, code_points[i].size());
        }
        const std::string header = make_header(target, tensor.shape(), longest);
        sink(header.data(), header.size());
        std::vector<uint8_t> item(4 * longest);
        for (const auto& cps : code_points) {
            std::fill(item.begin(), item.end(), 0);
            for (std::size_t k = 0; k < cps.size(); ++k) {
                item[4 * k] = static_cast<uint8_t>(cps[k]);
                item[4 * k + 1] = static_cast<uint8_t>(cps[k] >> 8);
                item[4 * k + 2] = static_cast<uint8_t>(cps[k] >> 16);
                item[4 * k + 3] = static_cast<uint8_t>(cps[k] >> 24);
            }
            sink(item.data(), item.size());
        }
        return;
    }

    const std::string header = make_header(target, tensor.shape());
    sink(header.data(), header.size());
    if (target == source || source == DataType::kInt4 || source == DataType::kUInt4) {
        if (target != source)
            logger().verbose(fmt::format("Writing a {} array to .npy as {} (numpy has no {})", dtype_name(source),
                                         dtype_name(target), dtype_name(source)));
        if (tensor.nbytes() > 0) sink(tensor.data(), tensor.nbytes());
        return;
    }
    // bfloat16 / float8 -> float32, in chunks.
    logger().verbose(fmt::format("Writing a {} array to .npy as float32 (numpy has no {}; values are exact)",
                                 dtype_name(source), dtype_name(source)));
    constexpr std::size_t kChunk = 1 << 14;
    std::vector<float> widened(std::min(count, kChunk));
    for (std::size_t start = 0; start < count; start += kChunk) {
        const std::size_t n = std::min(kChunk, count - start);
        if (source == DataType::kBFloat16) {
            const auto* bits = tensor.data_as<uint16_t>() + start;
            for (std::size_t i = 0; i < n; ++i) widened[i] = bfloat16_to_float(bits[i]);
        } else {
            const auto* bits = tensor.data_as<uint8_t>() + start;
            for (std::size_t i = 0; i < n; ++i) widened[i] = float8_to_float(bits[i], source);
        }
        sink(widened.data(), n * sizeof(float));
    }
}

std::string save(const Tensor& tensor) {
    std::string bytes;
    save_to(tensor, [&](const void* data, std::size_t n) { bytes.append(static_cast<const char*>(data), n); });
    return bytes;
}

void save_base64(const Tensor& tensor, const std::function<void(const char*, std::size_t)>& sink) {
    base64::StreamEncoder encoder(sink);
    save_to(tensor, [&](const void* data, std::size_t n) { encoder.feed(data, n); });
    encoder.finish();
}

void save_file(const Tensor& tensor, const std::string& path) {
    write_file_atomically(path, [&](std::FILE* out) {
        save_to(tensor, [&](const void* data, std::size_t n) {
            if (n > 0 && std::fwrite(data, 1, n, out) != n)
                throw PolygraphyException(fmt::format("write failed: {}", std::strerror(errno)));
        });
    });
}

namespace {
struct Parsed {
    Layout layout;
    std::size_t header_total = 0;
};
Parsed parse_complete(const uint8_t* bytes, std::size_t nbytes) {
    const std::size_t header_total = header_total_size(bytes, std::min<std::size_t>(nbytes, 12), nbytes);
    if (header_total > nbytes)
        fail(fmt::format("truncated: the header needs {} bytes but there are only {}", header_total, nbytes));
    return {parse_layout(bytes, header_total, nbytes), header_total};
}
}  // namespace

Tensor load_view(const void* data, std::size_t nbytes, const std::shared_ptr<const void>& owner) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    const auto [layout, header_total] = parse_complete(bytes, nbytes);
    // Bools are copied: their bytes are normalised to 0/1, which a read-only view cannot do.
    auto* payload = const_cast<uint8_t*>(bytes + header_total);
    if (layout.direct() && layout.dtype != DataType::kBool &&
        reinterpret_cast<std::uintptr_t>(payload) % dtype_size(layout.dtype) == 0)
        return Tensor::wrap(layout.dtype, layout.shape, std::shared_ptr<void>(std::const_pointer_cast<void>(owner), payload),
                            payload);
    return load(data, nbytes);
}

Tensor load(const void* data, std::size_t nbytes) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    const auto [layout, header_total] = parse_complete(bytes, nbytes);
    if (layout.direct()) {
        auto owner = allocate(layout.data_bytes);
        if (layout.data_bytes > 0) std::memcpy(owner.get(), bytes + header_total, layout.data_bytes);
        Tensor tensor = Tensor::wrap(layout.dtype, layout.shape, owner, owner.get());
        normalize_bools(tensor);
        return tensor;
    }
    std::vector<uint8_t> raw(bytes + header_total, bytes + nbytes);
    Tensor tensor = tensor_from_raw(layout, raw.data());
    normalize_bools(tensor);
    return tensor;
}

Tensor load_file(const std::string& path) {
    MappedFile file(path);
    try {
        return load(file.data(), file.size());
    } catch (const FormatError& error) {
        throw FormatError(fmt::format("{}: {}", path, error.what()));
    }
}

std::optional<std::size_t> base64_length_hint(const char* text, std::size_t available) {
    try {
        if (available < 16) return std::nullopt;
        uint8_t prelude[12];
        if (base64::decode_groups(text, 4, prelude) != 4) return std::nullopt;
        const std::size_t header_total = header_total_size(prelude, sizeof(prelude), ~std::size_t{0});
        const std::size_t header_groups = (header_total + 2) / 3;
        if (header_groups > available / 4) return std::nullopt;
        std::vector<uint8_t> header(3 * header_groups);
        if (base64::decode_groups(text, header_groups, header.data()) != header_groups) return std::nullopt;
        const Layout layout = parse_layout(header.data(), header_total, 0, false);
        std::size_t total = 0;
        if (__builtin_add_overflow(header_total, layout.data_bytes, &total) || total / 3 >= available / 4 + 1)
            return std::nullopt;
        return (total + 2) / 3 * 4;
    } catch (const FormatError&) {
        return std::nullopt;
    }
}

Tensor load_base64(std::string_view text, const std::function<void(std::size_t)>& progress) {
    const std::size_t total = base64::decoded_size(text);
    const std::size_t groups = text.size() / 4;
    // The fixed part of the header first (magic, version, dict length).
    uint8_t prelude[12];
    const std::size_t prelude_groups = std::min<std::size_t>(groups, 4);
    const std::size_t prelude_bytes = base64::decode_range(text, 0, prelude_groups, prelude);
    const std::size_t header_total = header_total_size(prelude, prelude_bytes, total);
    if (header_total > total)
        fail(fmt::format("truncated: the header needs {} bytes but there are only {}", header_total, total));
    // Then the whole header; its last group may hold the first data bytes.
    const std::size_t header_groups = (header_total + 2) / 3;
    std::vector<uint8_t> header(3 * header_groups);
    const std::size_t header_bytes = base64::decode_range(text, 0, header_groups, header.data());
    const Layout layout = parse_layout(header.data(), header_total, total);
    const std::size_t spill = header_bytes - header_total;  // 0..2 data bytes decoded with the header

    auto decode_data = [&](uint8_t* dst) {
        std::memcpy(dst, header.data() + header_total, spill);
        base64::decode_range(text, header_groups, groups - header_groups, dst + spill, progress);
    };
    if (layout.direct()) {
        auto owner = allocate(layout.data_bytes);
        decode_data(static_cast<uint8_t*>(owner.get()));
        Tensor tensor = Tensor::wrap(layout.dtype, layout.shape, owner, owner.get());
        normalize_bools(tensor);
        return tensor;
    }
    std::vector<uint8_t> raw(layout.data_bytes + 1);
    decode_data(raw.data());
    Tensor tensor = tensor_from_raw(layout, raw.data());
    normalize_bools(tensor);
    return tensor;
}

}  // namespace polygraphy::npy
