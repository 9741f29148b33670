#include "polygraphy/comparator/error_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "polygraphy/common/float16.h"

namespace polygraphy {
namespace {

// Elements [begin, begin + count) as doubles, with the common dtypes read directly (Tensor::cast goes
// through a generic per-element dispatch, which dominated the time of `debug diff`).
void read_doubles(const Tensor& tensor, int64_t begin, int64_t count, double* out) {
    auto copy = [&](const auto* data) {
        for (int64_t i = 0; i < count; ++i) out[i] = static_cast<double>(data[begin + i]);
    };
    switch (tensor.dtype()) {
        case DataType::kFloat32:
            copy(tensor.data_as<float>());
            break;
        case DataType::kFloat64:
            copy(tensor.data_as<double>());
            break;
        case DataType::kInt8:
            copy(tensor.data_as<int8_t>());
            break;
        case DataType::kUInt8:
            copy(tensor.data_as<uint8_t>());
            break;
        case DataType::kInt32:
            copy(tensor.data_as<int32_t>());
            break;
        case DataType::kInt64:
            copy(tensor.data_as<int64_t>());
            break;
        case DataType::kFloat16: {
            const uint16_t* data = tensor.data_as<uint16_t>();
            for (int64_t i = 0; i < count; ++i) out[i] = half_to_float(data[begin + i]);
            break;
        }
        default:
            for (int64_t i = 0; i < count; ++i) out[i] = tensor.value_as_double(begin + i);
    }
}

// Elements read per block: two blocks of doubles stay in the L1/L2 cache, and nothing as large as the
// tensors is allocated (two double copies of a tensor were 4x a float32 tensor's bytes).
constexpr int64_t kBlockElements = 2048;

}  // namespace

void ErrorAccumulator::add(const Tensor& reference, const Tensor& other) {
    if (!error_.empty()) return;
    for (const Tensor* tensor : {&reference, &other})
        if (tensor->dtype() == DataType::kString || tensor->dtype() == DataType::kBool) {
            error_ = fmt::format("{} values cannot be compared by their error", dtype_name(tensor->dtype()));
            return;
        }
    if (reference.numel() != other.numel()) {
        error_ = fmt::format("shapes {} and {} hold different numbers of elements", shape_to_string(reference.shape()),
                             shape_to_string(other.shape()));
        return;
    }
    const int64_t total = reference.numel();
    double x[kBlockElements];
    double y[kBlockElements];
    for (int64_t begin = 0; begin < total; begin += kBlockElements) {
        const int64_t count = std::min(kBlockElements, total - begin);
        read_doubles(reference, begin, count, x);
        read_doubles(other, begin, count, y);
        add_block(x, y, count);
    }
    size_ += total;
}

void ErrorAccumulator::add_block(const double* x, const double* y, int64_t count) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < count; ++i) {
        const double xa = x[i], yb = y[i];
        if (!std::isfinite(xa) || !std::isfinite(yb)) {
            // Equal infinities and NaN against NaN agree; anything else fails with an infinite error.
            const bool agree = (std::isnan(xa) && std::isnan(yb)) || xa == yb;
            if (!agree) {
                ++failing_;
                ++nonfinite_failing_;
                max_abs_ = max_rel_ = kInf;
            }
            continue;
        }
        const double error = std::abs(yb - xa);
        const double magnitude = std::abs(xa);
        const double relative = error == 0 ? 0 : magnitude == 0 ? kInf : error / magnitude;
        if (error > tolerances_.atol + tolerances_.rtol * magnitude) ++failing_;
        max_abs_ = std::max(max_abs_, error);
        max_rel_ = std::max(max_rel_, relative);
        sum_abs_ += error;
        sum_rel_ += relative;
        sum_aa_ += xa * xa;
        sum_bb_ += yb * yb;
        sum_ab_ += xa * yb;
        sum_ee_ += error * error;
        ++finite_;
    }
}

void ErrorAccumulator::set_error(const std::string& error) {
    error_ = error;
}

ErrorFigures ErrorAccumulator::figures() const {
    ErrorFigures figures;
    figures.size = size_;
    figures.error = error_;
    if (!error_.empty()) {
        figures.passed = false;
        figures.cosine = figures.sqnr_db = figures.relative_rms = figures.max_abs = std::nan("");
        figures.mean_abs = figures.max_rel = figures.mean_rel = figures.gain_error = std::nan("");
        return figures;
    }
    constexpr double kInf = std::numeric_limits<double>::infinity();
    figures.max_abs = max_abs_;
    figures.max_rel = max_rel_;
    figures.mean_abs = finite_ ? sum_abs_ / static_cast<double>(finite_) : 0;
    figures.mean_rel = finite_ ? sum_rel_ / static_cast<double>(finite_) : 0;
    if (sum_aa_ == 0 && sum_bb_ == 0)
        figures.cosine = 1;
    else if (sum_aa_ == 0 || sum_bb_ == 0)
        figures.cosine = 0;
    else
        figures.cosine = sum_ab_ / std::sqrt(sum_aa_ * sum_bb_);
    figures.sqnr_db = sum_ee_ == 0 ? kInf : sum_aa_ == 0 ? -kInf : 10 * std::log10(sum_aa_ / sum_ee_);
    figures.relative_rms = sum_ee_ == 0 ? 0 : sum_aa_ == 0 ? kInf : std::sqrt(sum_ee_ / sum_aa_);
    figures.gain_error = sum_aa_ == 0 ? (sum_bb_ == 0 ? 0 : kInf) : (sum_ab_ - sum_aa_) / sum_aa_;
    if (nonfinite_failing_) figures.relative_rms = figures.gain_error = kInf;  // a NaN or an infinity that differs
    figures.failing = failing_;
    figures.passed = failing_ == 0;
    return figures;
}

ErrorFigures compute_error_figures(const Tensor& reference, const Tensor& other, DiffTolerances tolerances) {
    ErrorAccumulator accumulator(tolerances);
    accumulator.add(reference, other);
    return accumulator.figures();
}

}  // namespace polygraphy
