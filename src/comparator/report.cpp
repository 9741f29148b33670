// Text of Polygraphy's comparison report: Python number formatting, numpy array printing, histograms.
#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "comparator/report_internal.h"
#include "comparator/stats_internal.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy::stats {
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
            std::string integer = (d.negative ? "-" : "") + digits.substr(0, 1);
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
        return "[" + s.substr(hanging.size()) + "]";
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

// ---- numpy.histogram(bins=10) ----
// Integers ordered like the floats they are made from: -0 and +0 share a key, NaNs land beyond the
// infinities.
inline int32_t order_key(float v) {
    const auto bits = std::bit_cast<int32_t>(v);
    return bits < 0 ? static_cast<int32_t>((bits ^ 0x7fffffff) + 1) : bits;
}
inline int64_t order_key(double v) {
    const auto bits = std::bit_cast<int64_t>(v);
    return bits < 0 ? static_cast<int64_t>((bits ^ 0x7fffffffffffffffLL) + 1) : bits;
}

// Bin indices are computed in the bin dtype T, with numpy's one-ULP corrections against the edges.
// Branch-light, four interleaved counter sets (neighbours often share a bin), OpenMP over blocks.
template <typename T, typename Get>
std::vector<int64_t> histogram_counts(int64_t n, Get get, double first, double last, const std::vector<T>& edges,
                                      double norm_denominator) {
    constexpr int kBins = 10;
    constexpr int kSets = 4;
    const T first_t = static_cast<T>(first), last_t = static_cast<T>(last);
    const T denominator = static_cast<T>(norm_denominator);
    const auto first_key = order_key(first_t), last_key = order_key(last_t);
    const int nthreads = detail::threads_for(n);
    std::vector<std::array<int64_t, kBins * kSets>> partial(static_cast<std::size_t>(nthreads));
#pragma omp parallel num_threads(nthreads)
    {
        const int tid = omp_get_thread_num();
        std::array<int64_t, kBins * kSets> counts{};
        constexpr int64_t kBlock = 1024;
        T values[kBlock];
        int32_t raw_index[kBlock];
        const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp for schedule(dynamic, 16)
        for (int64_t block_index = 0; block_index < blocks; ++block_index) {
            const int64_t block = block_index * kBlock;
            const int64_t len = std::min(kBlock, n - block);
            // Vectorizable part: numpy's first guess of the bin, ((x - first) / denominator) * bins.
            for (int64_t j = 0; j < len; ++j) values[j] = static_cast<T>(get(block + j));
            for (int64_t j = 0; j < len; ++j) {
                const T x = values[j];
                // In range (NaNs are out), decided on order-preserving integer keys and applied with bit
                // masks: float compares and selects may trap on NaN, which stops the vectorizer.
                const auto key = order_key(x);
                using Bits = decltype(key);
                const Bits mask = -static_cast<Bits>((key >= first_key) & (key <= last_key));
                const T in_range = std::bit_cast<T>(
                    static_cast<Bits>((std::bit_cast<Bits>(x) & mask) | (std::bit_cast<Bits>(first_t) & ~mask)));
                values[j] = in_range;
                const int guess = static_cast<int>(((in_range - first_t) / denominator) * static_cast<T>(kBins));
                const int capped = guess < kBins - 1 ? guess : kBins - 1;
                raw_index[j] =
                    static_cast<int32_t>((capped & static_cast<int32_t>(mask)) | ~static_cast<int32_t>(mask));
            }
            // The one-ULP corrections against the edges, and the counts.
            for (int64_t j = 0; j < len; ++j) {
                int index = raw_index[j];
                if (index < 0) continue;
                const T x = values[j];
                index -= x < edges[static_cast<std::size_t>(index)] ? 1 : 0;
                index += (index != kBins - 1 && x >= edges[static_cast<std::size_t>(index + 1)]) ? 1 : 0;
                index = std::clamp(index, 0, kBins - 1);
                ++counts[static_cast<std::size_t>((j % kSets) * kBins + index)];
            }
        }
        partial[static_cast<std::size_t>(tid)] = counts;
    }
    std::vector<int64_t> totals(kBins, 0);
    for (const auto& counts : partial)
        for (int set = 0; set < kSets; ++set)
            for (int b = 0; b < kBins; ++b)
                totals[static_cast<std::size_t>(b)] += counts[static_cast<std::size_t>(set * kBins + b)];
    return totals;
}

}  // namespace

std::string format_g(double value, int precision) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    return buffer;
}

std::string index_tuple_string(int64_t flat, const Shape& shape) {
    if (shape.empty()) return "()";
    std::vector<int64_t> index(shape.size(), 0);
    for (std::size_t axis = shape.size(); axis-- > 0;) {
        if (shape[axis] <= 0) continue;
        index[axis] = flat % shape[axis];
        flat /= shape[axis];
    }
    std::string text = "(";
    for (std::size_t i = 0; i < index.size(); ++i) {
        if (i) text += ", ";
        text += std::to_string(index[i]);
    }
    return text + (index.size() == 1 ? ",)" : ")");
}

std::string format_stats(const ArrayStats& stats, const Shape& shape) {
    // compute_argmin of an empty array is the plain 0 of Polygraphy's zero_on_empty.
    const bool empty = stats.size == 0;
    const std::string argmin = empty ? "0" : index_tuple_string(stats.argmin, shape);
    const std::string argmax = empty ? "0" : index_tuple_string(stats.argmax, shape);
    std::string text = "mean=" + format_g(stats.mean, 5) + ", std-dev=" + format_g(stats.std_dev, 5) +
                       ", var=" + format_g(stats.var, 5) + ", median=" + format_g(stats.median, 5) +
                       ", min=" + format_g(stats.min, 5) + " at " + argmin + ", max=" + format_g(stats.max, 5) +
                       " at " + argmax + ", avg-magnitude=" + format_g(stats.avg_magnitude, 5);
    if (stats.has_quantiles)
        text +=
            ", p90=" + format_g(stats.p90, 5) + ", p95=" + format_g(stats.p95, 5) + ", p99=" + format_g(stats.p99, 5);
    return text;
}

std::string array_to_string(const Tensor& tensor) {
    return array_to_string(tensor, PrintOptions{});
}

std::string array_to_string(const Tensor& tensor, const PrintOptions& options) {
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

std::string histogram_string(const Tensor& tensor, std::optional<std::pair<double, double>> range) {
    return detail::histogram_text(tensor, range, std::nullopt);
}

namespace detail {

std::string histogram_text(const Tensor& tensor, std::optional<std::pair<double, double>> range,
                           std::optional<std::pair<double, double>> extremes) {
    const DataType dtype = tensor.dtype();
    if (dtype == DataType::kBool || dtype == DataType::kString) return "";
    auto refuse = [](const std::string& reason) {
        logger().verbose("Could not generate histogram. Note: Error was: " + reason);
        return std::string();
    };

    double first, last;
    bool data_range = false;  // numpy scalars of the data's dtype, not Python floats
    if (range) {
        std::tie(first, last) = *range;
        if (first > last) return refuse("max must be larger than min in range parameter.");
        if (!std::isfinite(first) || !std::isfinite(last))
            return refuse("supplied range of [" + python_float_repr(first) + ", " + python_float_repr(last) +
                          "] is not finite");
    } else if (tensor.numel() == 0) {
        first = 0;
        last = 1;
    } else {
        if (!extremes) {
            const ArrayStats stats = compute_stats(tensor);
            extremes = std::make_pair(stats.min, stats.max);
        }
        std::tie(first, last) = *extremes;
        data_range = true;
        if (!std::isfinite(first) || !std::isfinite(last))
            return refuse("autodetected range of [" + python_float_repr(first) + ", " + python_float_repr(last) +
                          "] is not finite");
    }
    if (first == last) {
        first -= 0.5;  // now float64 scalars either way
        last += 0.5;
        data_range = false;
    }

    // np.linspace(first, last, 11) in float64, then cast to the bin dtype: np.result_type(first, last, data).
    // Python floats take part by value: they fit float16 below 65000 and float32 below 3.4e38.
    constexpr int kBins = 10;
    DataType bin_dtype = DataType::kFloat64;
    if (dtype == DataType::kFloat32 || dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
        const double largest = std::max(std::fabs(first), std::fabs(last));
        if (data_range || (dtype != DataType::kFloat32 && largest < 65000.0))
            bin_dtype = dtype == DataType::kBFloat16 ? DataType::kFloat32 : dtype;
        else if (largest < 3.4e38)
            bin_dtype = DataType::kFloat32;
    }
    const bool float_bins = bin_dtype != DataType::kFloat64;
    const double delta = last - first;
    const double step = delta / kBins;
    std::vector<double> edges(kBins + 1);
    for (int k = 0; k < kBins; ++k) edges[static_cast<std::size_t>(k)] = static_cast<double>(k) * step + first;
    edges[kBins] = last;
    for (double& edge : edges) edge = round_to_dtype(edge, bin_dtype);

    std::vector<int64_t> counts;
    const int64_t n = tensor.numel();
    if (dtype == DataType::kFloat32) {
        const float* data = tensor.data_as<float>();
        const std::vector<float> edges32(edges.begin(), edges.end());
        counts = histogram_counts<float>(
            n, [data](int64_t i) { return data[i]; }, first, last, edges32, delta);
    } else if (float_bins) {
        const std::vector<float> edges32(edges.begin(), edges.end());
        counts = histogram_counts<float>(
            n, [&](int64_t i) { return tensor.value_as_double(i); }, first, last, edges32, delta);
    } else if (dtype == DataType::kFloat64) {
        const double* data = tensor.data_as<double>();
        counts = histogram_counts<double>(
            n, [data](int64_t i) { return data[i]; }, first, last, edges, delta);
    } else {
        counts = histogram_counts<double>(
            n, [&](int64_t i) { return tensor.value_as_double(i); }, first, last, edges, delta);
    }

    const int64_t max_count = *std::max_element(counts.begin(), counts.end());
    if (max_count == 0) return "None";  // Polygraphy's str_histogram returns None for empty tensors

    std::vector<std::string> labels;
    for (double edge : edges) labels.push_back(format_g(edge, 3));
    std::size_t start_width = 0, end_width = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) {
        start_width = std::max(start_width, labels[i].size());
        if (i > 0) end_width = std::max(end_width, labels[i].size());
    }
    auto pad = [](const std::string& text, std::size_t width) {
        return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
    };
    constexpr int kMaxWidth = 40;
    std::string text =
        "---- Histogram ----\n" + pad("Bin Range", start_width + end_width + 5) + "|  Num Elems | Visualization";
    for (int k = 0; k < kBins; ++k) {
        char count[32];
        std::snprintf(count, sizeof(count), "%10lld", static_cast<long long>(counts[static_cast<std::size_t>(k)]));
        const auto bar = static_cast<std::size_t>(kMaxWidth * static_cast<double>(counts[static_cast<std::size_t>(k)]) /
                                                  static_cast<double>(max_count));
        text += "\n(" + pad(labels[static_cast<std::size_t>(k)], start_width) + ", " +
                pad(labels[static_cast<std::size_t>(k) + 1], end_width) + ") | " + count + " | " +
                std::string(bar, '#');
    }
    return text;
}

std::string indent_block(const std::string& block) {
    std::string text = "    ";
    for (char c : block) {
        text += c;
        if (c == '\n') text += "    ";
    }
    return text;
}

void log_output_stats(const Tensor& tensor, const ArrayStats& stats, bool failed, const std::string& label,
                      std::optional<std::pair<double, double>> hist_range) {
    constexpr int64_t kSmallOutput = 100;  // Polygraphy prints the values of outputs this small
    const std::string prefix = label.empty() ? "" : label + " | Stats: ";
    logger().info(prefix + format_stats(stats, tensor.shape()));
    auto guard = logger().indent();
    const Severity severity = failed ? Severity::kInfo : Severity::kVerbose;
    if (!logger().enabled(severity)) return;
    if (tensor.numel() <= kSmallOutput)
        logger().log(severity, "---- Values ----\n" + indent_block(array_to_string(tensor)));
    logger().log(severity, histogram_text(tensor, hist_range, std::make_pair(stats.min, stats.max)));
}

}  // namespace detail

}  // namespace polygraphy::stats
