// numpy's str(array) (numpy_print.h): the shortest float text per dtype, numpy's float formatter
// (maxprec mode, common exponent, padding) and the array printer (summarization, line wrapping).
#include "polygraphy/common/numpy_print.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy::numpy {
namespace {

// A finite decimal d1.d2d3... x 10^exponent; `digits` has no trailing zeros (except "0" itself).
struct Decimal {
    bool negative = false;
    std::string digits;
    int exponent = 0;
};

// Parses printf/to_chars scientific output "[-]d[.ddd]e[+-]XX".
Decimal parse_scientific(const char* text) {
    Decimal result;
    const char* p = text;
    if (*p == '-') {
        result.negative = true;
        ++p;
    }
    for (; *p && *p != 'e'; ++p)
        if (*p != '.') result.digits += *p;
    if (*p == 'e') result.exponent = std::atoi(p + 1);
    while (result.digits.size() > 1 && result.digits.back() == '0') result.digits.pop_back();
    return result;
}

Decimal printf_scientific(double value, int fraction_digits) {
    char buffer[512];
    std::snprintf(buffer, sizeof(buffer), "%.*e", fraction_digits, value);
    return parse_scientific(buffer);
}

// Rounds a double to the precision of `dtype` (the values a tensor of that dtype can hold).
// Shortest digits that read back as `value` in `dtype` (numpy's Dragon4 "unique" mode).
Decimal shortest_decimal(double value, DataType dtype) {
    char buffer[64];
    if (dtype == DataType::kFloat64) {
        auto end = std::to_chars(buffer, buffer + sizeof(buffer) - 1, value, std::chars_format::scientific).ptr;
        *end = '\0';
        return parse_scientific(buffer);
    }
    if (dtype != DataType::kFloat16 && dtype != DataType::kBFloat16) {
        auto end =
            std::to_chars(buffer, buffer + sizeof(buffer) - 1, static_cast<float>(value), std::chars_format::scientific)
                .ptr;
        *end = '\0';
        return parse_scientific(buffer);
    }
    // Half types: the fewest digits whose nearest candidates round-trip, preferring the closest one.
    if (value == 0) return Decimal{std::signbit(value), "0", 0};
    for (int precision = 1; precision <= 17; ++precision) {
        const Decimal rounded = printf_scientific(value, precision - 1);
        std::string mantissa = rounded.digits;
        mantissa.resize(static_cast<std::size_t>(precision), '0');
        const long long base = std::stoll(mantissa);
        const int scale = rounded.exponent - precision + 1;
        double best = 0;
        long long best_mantissa = -1;
        for (long long candidate : {base, base - 1, base + 1}) {
            if (candidate <= 0) continue;
            std::snprintf(buffer, sizeof(buffer), "%llde%d", candidate, scale);
            const double parsed = std::strtod(buffer, nullptr) * (rounded.negative ? -1 : 1);
            if (round_to_dtype(parsed, dtype) != value) continue;
            if (best_mantissa < 0 || std::fabs(parsed - value) < std::fabs(best - value)) {
                best = parsed;
                best_mantissa = candidate;
            }
        }
        if (best_mantissa >= 0) {
            Decimal result;
            result.negative = rounded.negative;
            result.digits = std::to_string(best_mantissa);
            result.exponent = scale + static_cast<int>(result.digits.size()) - 1;
            while (result.digits.size() > 1 && result.digits.back() == '0') result.digits.pop_back();
            return result;
        }
    }
    return printf_scientific(value, 16);
}

// "123.45" / "0.001" / "5." style positional text of a decimal (no trailing zeros).
std::string positional_text(const Decimal& decimal) {
    std::string integer, fraction;
    const int count = static_cast<int>(decimal.digits.size());
    if (decimal.exponent >= 0) {
        for (int i = 0; i <= decimal.exponent; ++i) integer += i < count ? decimal.digits[i] : '0';
        if (count > decimal.exponent + 1)
            fraction = decimal.digits.substr(static_cast<std::size_t>(decimal.exponent + 1));
    } else {
        integer = "0";
        fraction = std::string(static_cast<std::size_t>(-decimal.exponent - 1), '0') + decimal.digits;
    }
    if (decimal.digits == "0") fraction.clear();
    return (decimal.negative ? "-" : "") + integer + "." + fraction;
}

std::string strip_trailing_fraction_zeros(std::string text) {
    const auto point = text.find('.');
    if (point == std::string::npos) return text;
    std::size_t end = text.size();
    while (end > point + 1 && text[end - 1] == '0') --end;
    return text.substr(0, end);
}

// Python's repr-style text of a float of `dtype` (numpy scalar str: positional for 1e-4 <= |x| < 1e16).
std::string scalar_float_text(double value, DataType dtype) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    const Decimal decimal = shortest_decimal(value, dtype);
    const double magnitude = std::fabs(value);
    if (value == 0 || (magnitude >= 1e-4 && magnitude < 1e16)) {
        std::string text = positional_text(decimal);
        if (text.back() == '.') text += '0';
        return text;
    }
    std::string text = decimal.negative ? "-" : "";
    text += decimal.digits[0];
    if (decimal.digits.size() > 1) text += "." + decimal.digits.substr(1);
    char exponent[16];
    std::snprintf(exponent, sizeof(exponent), "e%c%02d", decimal.exponent < 0 ? '-' : '+', std::abs(decimal.exponent));
    return text + exponent;
}

// ---- numpy array printing (numpy/core/arrayprint.py, numpy 1.24 defaults) ----
constexpr int kPrecision = 8;
constexpr int64_t kThreshold = 1000;
// Bound for print options given as "everything" (numpy's sys.maxsize), small enough that the
// arithmetic on them cannot overflow.
constexpr int64_t kMaxPrintOption = 1 << 29;

enum class Kind { kBool, kInteger, kFloat, kString };

Kind kind_of(DataType dtype) {
    if (dtype == DataType::kBool) return Kind::kBool;
    if (dtype == DataType::kString) return Kind::kString;
    if (dtype_is_integer(dtype)) return Kind::kInteger;
    return Kind::kFloat;
}

// Display dtype for floats: numpy's own for float16/32/64; others print as float32.
DataType float_display_dtype(DataType dtype) {
    switch (dtype) {
        case DataType::kFloat16:
        case DataType::kFloat64:
        case DataType::kBFloat16:
            return dtype;
        default:
            return DataType::kFloat32;
    }
}

// numpy FloatingFormat (floatmode "maxprec", sign "-").
class FloatFormatter {
public:
    FloatFormatter(const std::vector<double>& values, DataType dtype) : dtype_(dtype) {
        std::vector<double> finite;
        bool has_non_finite = false, has_negative_inf = false;
        for (double v : values) {
            if (std::isfinite(v))
                finite.push_back(v);
            else {
                has_non_finite = true;
                if (std::isinf(v) && v < 0) has_negative_inf = true;
            }
        }
        double max_value = 0, min_value = 0;
        bool any_non_zero = false;
        for (double v : finite) {
            if (v == 0) continue;
            const double magnitude = std::fabs(v);
            if (!any_non_zero) max_value = min_value = magnitude;
            max_value = std::max(max_value, magnitude);
            min_value = std::min(min_value, magnitude);
            any_non_zero = true;
        }
        if (any_non_zero) {
            // Thresholds compare in float64 (numpy scalars vs Python floats); the ratio is in the dtype.
            const double ratio = round_to_dtype(max_value / min_value, dtype_);
            exp_format_ = max_value >= 1e8 || min_value < 0.0001 || ratio > 1000.0;
        }
        if (finite.empty()) {
            pad_left_ = pad_right_ = 0;
        } else if (exp_format_) {
            int max_fraction = 0, max_exponent_digits = 0;
            for (double v : finite) {
                const Decimal d = unique_scientific(v);
                max_fraction = std::max(max_fraction, static_cast<int>(d.digits.size()) - 1);
                pad_left_ = std::max(pad_left_, d.negative ? 2 : 1);
                max_exponent_digits = std::max(max_exponent_digits, std::abs(d.exponent) >= 100 ? 3 : 2);
            }
            precision_ = max_fraction;
            exp_size_ = max_exponent_digits;
            pad_right_ = exp_size_ + 2 + precision_;
        } else {
            for (double v : finite) {
                const std::string text = unique_positional(v);
                const auto point = text.find('.');
                pad_left_ = std::max(pad_left_, static_cast<int>(point));
                pad_right_ = std::max(pad_right_, static_cast<int>(text.size() - point - 1));
            }
        }
        if (has_non_finite) {
            const int offset = pad_right_ + 1;
            pad_left_ = std::max({pad_left_, 3 - offset, 3 + (has_negative_inf ? 1 : 0) - offset});
        }
    }

    std::string operator()(double v) const {
        if (!std::isfinite(v)) {
            const std::string text = std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
            const int width = pad_left_ + pad_right_ + 1;
            return std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(text.size()))), ' ') +
                   text;
        }
        if (exp_format_) {
            // Exactly `precision_` digits of the exact value (min_digits == precision), padded exponent.
            const Decimal d = printf_scientific(v, precision_);
            std::string digits = d.digits;
            digits.resize(static_cast<std::size_t>(precision_ + 1), '0');
            std::string integer = d.negative ? "-" : "";
            integer += digits[0];
            std::string text(static_cast<std::size_t>(std::max(0, pad_left_ - static_cast<int>(integer.size()))), ' ');
            text += integer + "." + digits.substr(1);
            std::string exponent = std::to_string(std::abs(d.exponent));
            if (static_cast<int>(exponent.size()) < exp_size_)
                exponent.insert(0, static_cast<std::size_t>(exp_size_ - static_cast<int>(exponent.size())), '0');
            return text + "e" + (d.exponent < 0 ? "-" : "+") + exponent;
        }
        const std::string text = unique_positional(v);
        const auto point = text.find('.');
        std::string result(static_cast<std::size_t>(std::max(0, pad_left_ - static_cast<int>(point))), ' ');
        result += text;
        const int fraction = static_cast<int>(text.size() - point - 1);
        result.append(static_cast<std::size_t>(std::max(0, pad_right_ - fraction)), ' ');
        return result;
    }

private:
    // Dragon4 scientific, unique, precision 8, trim '.': shortest digits unless more than 9 are needed.
    Decimal unique_scientific(double v) const {
        Decimal d = shortest_decimal(v, dtype_);
        if (static_cast<int>(d.digits.size()) - 1 > kPrecision) d = printf_scientific(v, kPrecision);
        return d;
    }

    // Dragon4 positional, unique, at most 8 fraction digits, trim '.'.
    std::string unique_positional(double v) const {
        const Decimal d = shortest_decimal(v, dtype_);
        const int fraction = std::max(0, static_cast<int>(d.digits.size()) - 1 - d.exponent);
        if (fraction <= kPrecision) return positional_text(d);
        char buffer[512];
        std::snprintf(buffer, sizeof(buffer), "%.*f", kPrecision, v);
        return strip_trailing_fraction_zeros(buffer);
    }

    DataType dtype_;
    bool exp_format_ = false;
    int pad_left_ = 0, pad_right_ = 0, precision_ = kPrecision, exp_size_ = 2;
};

class ArrayPrinter {
public:
    ArrayPrinter(const Tensor& tensor, const PrintOptions& options)
        : tensor_(tensor),
          shape_(tensor.shape()),
          edge_items_(std::max<int64_t>(0, std::min<int64_t>(options.edge_items, kMaxPrintOption))),
          line_width_(static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(options.line_width, kMaxPrintOption)))) {
        summarize_ = tensor.numel() > kThreshold;
        strides_.assign(shape_.size(), 1);
        for (int axis = static_cast<int>(shape_.size()) - 2; axis >= 0; --axis)
            strides_[axis] = strides_[axis + 1] * shape_[axis + 1];

        // numpy sizes the columns from the elements actually shown.
        std::vector<int64_t> shown;
        collect_shown(0, 0, shown);
        kind_ = kind_of(tensor.dtype());
        if (kind_ == Kind::kFloat) {
            std::vector<double> values;
            values.reserve(shown.size());
            for (int64_t offset : shown) values.push_back(tensor.value_as_double(offset));
            float_formatter_ = std::make_unique<FloatFormatter>(values, float_display_dtype(tensor.dtype()));
        } else if (kind_ == Kind::kInteger) {
            std::size_t width = 0;
            for (int64_t offset : shown) width = std::max(width, integer_text(offset).size());
            integer_width_ = width;
        }
    }

    std::string print() const { return recurse(0, 0, " ", line_width_); }

private:
    void collect_shown(std::size_t axis, int64_t offset, std::vector<int64_t>& shown) const {
        if (axis == shape_.size()) {
            shown.push_back(offset);
            return;
        }
        const int64_t length = shape_[axis];
        for (int64_t i = 0; i < length; ++i) {
            if (summarize_ && length > 2 * edge_items_ && i == edge_items_) i = length - edge_items_;
            collect_shown(axis + 1, offset + i * strides_[axis], shown);
        }
    }

    std::string integer_text(int64_t offset) const {
        switch (tensor_.dtype()) {
            case DataType::kUInt64:
                return std::to_string(tensor_.data_as<uint64_t>()[offset]);
            case DataType::kInt64:
                return std::to_string(tensor_.data_as<int64_t>()[offset]);
            default:
                return std::to_string(static_cast<int64_t>(tensor_.value_as_double(offset)));
        }
    }

    std::string format_element(int64_t offset) const {
        switch (kind_) {
            case Kind::kBool:
                return tensor_.data_as<uint8_t>()[offset] ? " True" : "False";
            case Kind::kString:
                return python_repr(tensor_.strings()[static_cast<std::size_t>(offset)]);
            case Kind::kInteger: {
                const std::string text = integer_text(offset);
                return std::string(integer_width_ - std::min(integer_width_, text.size()), ' ') + text;
            }
            case Kind::kFloat:
                return (*float_formatter_)(tensor_.value_as_double(offset));
        }
        return {};
    }

    static void extend_line(std::string& s, std::string& line, const std::string& word, int width,
                            const std::string& next_prefix) {
        bool needs_wrap = static_cast<int>(line.size() + word.size()) > width;
        if (line.size() <= next_prefix.size()) needs_wrap = false;  // wrapping would not help
        if (needs_wrap) {
            std::size_t end = line.size();
            while (end > 0 && line[end - 1] == ' ') --end;
            s += line.substr(0, end) + "\n";
            line = next_prefix;
        }
        line += word;
    }

    std::string recurse(std::size_t axis, int64_t offset, const std::string& hanging, int width) const {
        if (axis == shape_.size()) return format_element(offset);
        const std::string next_hanging = hanging + " ";
        const int next_width = width - 1;
        const int64_t length = shape_[axis];
        const bool show_summary = summarize_ && 2 * edge_items_ < length;
        const int64_t leading = show_summary ? edge_items_ : 0;
        const int64_t trailing = show_summary ? edge_items_ : length;
        auto child = [&](int64_t i) {
            return recurse(axis + 1, offset + i * strides_[axis], next_hanging, next_width);
        };

        std::string s;
        if (axis + 1 == shape_.size()) {
            const int element_width = width - 1;  // room for the closing bracket
            std::string line = hanging;
            for (int64_t i = 0; i < leading; ++i) {
                extend_line(s, line, child(i), element_width, hanging);
                line += " ";
            }
            if (show_summary) {
                extend_line(s, line, "...", element_width, hanging);
                line += " ";
            }
            for (int64_t i = trailing; i > 1; --i) {
                extend_line(s, line, child(length - i), element_width, hanging);
                line += " ";
            }
            extend_line(s, line, child(length - 1), element_width, hanging);
            s += line;
        } else {
            const std::string line_sep(shape_.size() - axis - 1, '\n');
            for (int64_t i = 0; i < leading; ++i) s += hanging + child(i) + line_sep;
            if (show_summary) s += hanging + "..." + line_sep;
            for (int64_t i = trailing; i > 1; --i) s += hanging + child(length - i) + line_sep;
            s += hanging + child(length - 1);
        }
        std::string bracketed = "[";
        bracketed.append(s, hanging.size());
        bracketed += ']';
        return bracketed;
    }

    const Tensor& tensor_;
    Shape shape_;
    int64_t edge_items_;
    int line_width_;
    std::vector<int64_t> strides_;
    bool summarize_ = false;
    Kind kind_ = Kind::kFloat;
    std::unique_ptr<FloatFormatter> float_formatter_;
    std::size_t integer_width_ = 0;
};

}  // namespace

double round_to_dtype(double value, DataType dtype) {
    switch (dtype) {
        case DataType::kFloat32:
            return static_cast<float>(value);
        case DataType::kFloat16:
            return half_to_float(double_to_half(value));
        case DataType::kBFloat16:
            return bfloat16_to_float(float_to_bfloat16(static_cast<float>(value)));
        default:
            return value;
    }
}

std::string array_str(const Tensor& tensor, const PrintOptions& options) {
    const DataType dtype = tensor.dtype();
    if (!tensor.defined()) return "None";
    if (dtype == DataType::kComplex64 || dtype == DataType::kComplex128)
        throw UnsupportedError("Cannot print a tensor of type " + std::string(dtype_name(dtype)));
    if (tensor.rank() == 0 && tensor.numel() == 1) {
        switch (kind_of(dtype)) {
            case Kind::kBool:
                return tensor.data_as<uint8_t>()[0] ? "True" : "False";
            case Kind::kString:
                return tensor.strings().at(0);
            case Kind::kInteger:
                if (dtype == DataType::kUInt64) return std::to_string(tensor.data_as<uint64_t>()[0]);
                if (dtype == DataType::kInt64) return std::to_string(tensor.data_as<int64_t>()[0]);
                return std::to_string(static_cast<int64_t>(tensor.value_as_double(0)));
            case Kind::kFloat:
                return scalar_float_text(tensor.value_as_double(0), float_display_dtype(dtype));
        }
    }
    if (tensor.numel() == 0) return "[]";
    return ArrayPrinter(tensor, options).print();
}

}  // namespace polygraphy::numpy
