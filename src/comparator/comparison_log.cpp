// Text of Polygraphy's comparison log: Python number formatting, numpy array printing, histograms.
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

#include "comparator/comparison_log.h"
#include "comparator/stats_internal.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/float16.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/numpy_print.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy::stats {
namespace {
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
    for (double& edge : edges) edge = numpy::round_to_dtype(edge, bin_dtype);

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
        logger().log(severity, "---- Values ----\n" + indent_block(numpy::array_str(tensor)));
    logger().log(severity, histogram_text(tensor, hist_range, std::make_pair(stats.min, stats.max)));
}

}  // namespace detail

}  // namespace polygraphy::stats
