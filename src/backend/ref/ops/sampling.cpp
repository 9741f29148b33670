// Sampling: random values (RandomUniform/Normal and their -Like forms, Bernoulli, Multinomial), and sampling at
// computed positions: GridSample (opset 16: 4-D, bilinear/nearest/bicubic; opset 20: N-D, linear/nearest/cubic) and
// AffineGrid (opset 20, 2-D and 3-D). (DeformConv, which samples too, is a convolution: conv.cpp.) Computed in double
// and rounded to the input's type; out-of-range samples follow padding_mode (zeros, border, reflection) the way the
// ONNX reference does: the coordinate is first clamped or reflected into the border box, then every tap of the
// interpolation kernel is fetched with the same padding rule.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

enum class SampleMode { kLinear, kNearest, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

// Reflects x into [low, high] (repeatedly, like a mirror at each end).
double reflect(double x, double low, double high) {
    const double range = high - low;
    if (range <= 0) return low;
    if (x < low || x > high) {
        // Whole mirror images passed (fmod keeps this exact and overflow-free for any magnitude).
        const double dx = x < low ? low - x : x - high;
        const double r = std::fmod(dx, range);
        const bool even = std::fmod(std::floor(dx / range), 2.0) == 0.0;
        if (x < low) return even ? low + r : high - r;
        return even ? high - r : low + r;
    }
    return x;
}

// Keys cubic convolution weights (A = -0.75) for the 4 taps around a point at fraction t.
void cubic_weights(double t, double weights[4]) {
    constexpr double a = -0.75;
    const double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
    weights[0] = ((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a;
    weights[1] = ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1;
    weights[2] = ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1;
    weights[3] = ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a;
}

class GridSampleKernel final : public Kernel {
public:
    explicit GridSampleKernel(const NodeInfo& node) {
        const bool v20 = node.opset() >= 20;
        const std::string mode = node.attr_string("mode", v20 ? "linear" : "bilinear");
        if (mode == "linear" || mode == "bilinear")
            mode_ = SampleMode::kLinear;
        else if (mode == "nearest")
            mode_ = SampleMode::kNearest;
        else if (mode == "cubic" || mode == "bicubic")
            mode_ = SampleMode::kCubic;
        else
            node.fail(fmt::format("attribute 'mode' must be {}, but it is '{}'",
                                  v20 ? "linear, nearest or cubic" : "bilinear, nearest or bicubic", mode));
        const std::string padding = node.attr_string("padding_mode", "zeros");
        if (padding == "zeros")
            padding_ = Padding::kZeros;
        else if (padding == "border")
            padding_ = Padding::kBorder;
        else if (padding == "reflection")
            padding_ = Padding::kReflection;
        else
            node.fail(
                fmt::format("attribute 'padding_mode' must be zeros, border or reflection, but it is '{}'", padding));
        const int64_t align = node.attr_int("align_corners", 0);
        if (align != 0 && align != 1)
            node.fail(fmt::format("attribute 'align_corners' must be 0 or 1, but it is {}", align));
        align_corners_ = align == 1;
        only_4d_ = !v20;
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        const Tensor& grid0 = context.required_input(1);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        if (!dtype_is_floating(grid0.dtype())) unsupported_dtype(node, grid0.dtype(), "grid");
        const int64_t spatial = x0.rank() - 2;
        if (spatial < 1 || (only_4d_ && spatial != 2))
            node.fail(fmt::format("input X must have rank {}, but it has shape {}", only_4d_ ? "4" : "3 or more",
                                  shape_to_string(x0.shape())));
        if (grid0.rank() != spatial + 2 || grid0.shape()[0] != x0.shape()[0] || grid0.shape().back() != spatial)
            node.fail(fmt::format("grid must have shape (N, ..., {}) with rank {} and N = {}, but it has shape {}",
                                  spatial, spatial + 2, x0.shape()[0], shape_to_string(grid0.shape())));
        const Tensor x = x0.cast(DataType::kFloat64), grid = grid0.cast(DataType::kFloat64);
        const int64_t batch = x.shape()[0], channels = x.shape()[1];
        std::vector<int64_t> dims(x.shape().begin() + 2, x.shape().end());
        int64_t plane = 1;
        for (int64_t d : dims) plane *= d;
        Shape out_shape{batch, channels};
        int64_t points = 1;
        for (int64_t i = 1; i <= spatial; ++i) {
            out_shape.push_back(grid.shape()[i]);
            points *= grid.shape()[i];
        }
        Tensor y(DataType::kFloat64, out_shape);
        std::vector<double> low(spatial), high(spatial);
        for (int64_t i = 0; i < spatial; ++i) {
            low[i] = align_corners_ ? 0.0 : -0.5;
            high[i] = align_corners_ ? static_cast<double>(dims[i] - 1) : static_cast<double>(dims[i]) - 0.5;
        }
        const double* in = x.data_as<double>();
        const double* g = grid.data_as<double>();
        double* out = y.data_as<double>();
        std::vector<double> coords(spatial);
        std::vector<int64_t> index(spatial);
        for (int64_t n = 0; n < batch; ++n) {
            for (int64_t p = 0; p < points; ++p) {
                const double* normalized = g + (n * points + p) * spatial;  // (x, y[, z]): last dim first
                for (int64_t i = 0; i < spatial; ++i) {
                    const double v = normalized[spatial - 1 - i];
                    const auto size = static_cast<double>(dims[i]);
                    double c = align_corners_ ? (v + 1) / 2.0 * (size - 1) : ((v + 1) * size - 1) / 2.0;
                    if (mode_ == SampleMode::kNearest) c = std::nearbyint(c);
                    if (c < low[i] || c > high[i]) {
                        if (padding_ == Padding::kBorder)
                            c = std::max(0.0, std::min(size - 1, c));
                        else if (padding_ == Padding::kReflection)
                            c = reflect(c, low[i], high[i]);
                    }
                    // Far outside (zeros padding) every tap reads 0: clamp so index arithmetic cannot overflow.
                    coords[i] = std::max(-4.0 - size, std::min(2.0 * size + 4.0, c));
                    if (std::isnan(c)) coords[i] = c;
                }
                const bool undefined =
                    std::any_of(coords.begin(), coords.end(), [](double c) { return std::isnan(c); });
                for (int64_t ch = 0; ch < channels; ++ch) {
                    const double* data = in + (n * channels + ch) * plane;
                    double value;
                    if (undefined) {
                        value = std::numeric_limits<double>::quiet_NaN();  // a NaN grid point samples NaN
                    } else if (mode_ == SampleMode::kNearest) {
                        for (int64_t i = 0; i < spatial; ++i) index[i] = static_cast<int64_t>(coords[i]);
                        value = fetch(data, dims, index, low, high);
                    } else {
                        value = interpolate(0, data, dims, coords, index, low, high);
                    }
                    out[(n * channels + ch) * points + p] = value;
                }
            }
        }
        context.set_output(0, y.cast(x0.dtype()));
    }

private:
    double fetch(const double* data, const std::vector<int64_t>& dims, const std::vector<int64_t>& index,
                 const std::vector<double>& low, const std::vector<double>& high) const {
        int64_t offset = 0;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            int64_t k = index[i];
            if (k < 0 || k >= dims[i]) {
                if (padding_ == Padding::kZeros) return 0.0;
                if (padding_ == Padding::kReflection)
                    k = static_cast<int64_t>(reflect(static_cast<double>(k), low[i], high[i]));
                k = std::max<int64_t>(0, std::min(dims[i] - 1, k));
            }
            offset = offset * dims[i] + k;
        }
        return data[offset];
    }

    // Separable linear or cubic interpolation over dimensions [dim, rank).
    double interpolate(std::size_t dim, const double* data, const std::vector<int64_t>& dims,
                       const std::vector<double>& coords, std::vector<int64_t>& index, const std::vector<double>& low,
                       const std::vector<double>& high) const {
        if (dim == dims.size()) return fetch(data, dims, index, low, high);
        const double base = std::floor(coords[dim]);
        const double t = coords[dim] - base;
        const auto first = static_cast<int64_t>(base);
        if (mode_ == SampleMode::kLinear) {
            index[dim] = first;
            const double a = interpolate(dim + 1, data, dims, coords, index, low, high);
            index[dim] = first + 1;
            const double b = interpolate(dim + 1, data, dims, coords, index, low, high);
            return (1 - t) * a + t * b;
        }
        double weights[4];
        cubic_weights(t, weights);
        double sum = 0;
        for (int k = 0; k < 4; ++k) {
            index[dim] = first - 1 + k;
            sum += weights[k] * interpolate(dim + 1, data, dims, coords, index, low, high);
        }
        return sum;
    }

    SampleMode mode_ = SampleMode::kLinear;
    Padding padding_ = Padding::kZeros;
    bool align_corners_ = false, only_4d_ = false;
};

class AffineGridKernel final : public Kernel {
public:
    explicit AffineGridKernel(const NodeInfo& node) {
        const int64_t align = node.attr_int("align_corners", 0);
        if (align != 0 && align != 1)
            node.fail(fmt::format("attribute 'align_corners' must be 0 or 1, but it is {}", align));
        align_corners_ = align == 1;
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& theta0 = context.required_input(0);
        if (!dtype_is_floating(theta0.dtype())) unsupported_dtype(node, theta0.dtype());
        const std::vector<int64_t> size = read_ints(node, context.required_input(1), "size");
        if (size.size() != 4 && size.size() != 5)
            node.fail(
                fmt::format("size must have 4 (N, C, H, W) or 5 (N, C, D, H, W) values, but it has {}", size.size()));
        const int64_t spatial = static_cast<int64_t>(size.size()) - 2;
        const int64_t batch = size[0];
        if (theta0.shape() != Shape{batch, spatial, spatial + 1})
            node.fail(fmt::format("theta must have shape ({}, {}, {}), but it has shape {}", batch, spatial,
                                  spatial + 1, shape_to_string(theta0.shape())));
        for (std::size_t i = 2; i < size.size(); ++i)
            if (size[i] <= 0) node.fail(fmt::format("size values must be positive, but one is {}", size[i]));
        const Tensor theta = theta0.cast(DataType::kFloat64);
        Shape out_shape{batch};
        for (std::size_t i = 2; i < size.size(); ++i) out_shape.push_back(size[i]);
        out_shape.push_back(spatial);
        Tensor grid(DataType::kFloat64, out_shape);
        // Base coordinates per axis, in (x, y[, z]) order: x runs along the last dim.
        auto base = [&](int64_t count, int64_t i) {
            if (align_corners_)
                return count == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(count - 1);
            return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(count);
        };
        const int64_t depth = spatial == 3 ? size[2] : 1, height = size[spatial == 3 ? 3 : 2],
                      width = size[spatial == 3 ? 4 : 3];
        double* out = grid.data_as<double>();
        for (int64_t n = 0; n < batch; ++n) {
            const double* t = theta.data_as<double>() + n * spatial * (spatial + 1);
            for (int64_t d = 0; d < depth; ++d)
                for (int64_t h = 0; h < height; ++h)
                    for (int64_t w = 0; w < width; ++w) {
                        double point[4] = {base(width, w), base(height, h), spatial == 3 ? base(depth, d) : 1.0, 1.0};
                        if (spatial == 2) point[2] = 1.0;
                        for (int64_t r = 0; r < spatial; ++r) {
                            double sum = 0;
                            for (int64_t k = 0; k <= spatial; ++k) sum += t[r * (spatial + 1) + k] * point[k];
                            *out++ = sum;
                        }
                    }
        }
        context.set_output(0, grid.cast(theta0.dtype()));
    }

private:
    bool align_corners_ = false;
};

// ---- Random sampling -----------------------------------------------------------------------------------

// Values cannot match another runtime's generator: these kernels guarantee the shape, the dtype and
// the distribution's range. A 'seed' attribute makes every run of the node repeat the same values
// (std::mt19937_64 seeded with it); without one each run draws a fresh seed.
std::mt19937_64 make_generator(const NodeInfo& node) {
    if (node.has_attr("seed"))
        return std::mt19937_64(static_cast<uint64_t>(static_cast<int64_t>(node.attr_float("seed", 0.0f))));
    std::random_device device;
    return std::mt19937_64((static_cast<uint64_t>(device()) << 32) ^ device());
}

DataType random_dtype(const NodeInfo& node, DataType fallback) {
    if (!node.has_attr("dtype")) return fallback;
    const DataType dtype = dtype_from_onnx(static_cast<int32_t>(node.attr_int("dtype", 1)));
    if (!dtype_is_floating(dtype) || dtype_name(dtype).starts_with("float8"))
        node.fail(fmt::format("attribute 'dtype' must be a float16, float, double or bfloat16 type, but it is {}",
                              node.attr_int("dtype", 1)));
    return dtype;
}

enum class Distribution { kUniform, kNormal };

template <Distribution kDistribution, bool kLike>
class RandomKernel final : public Kernel {
public:
    explicit RandomKernel(const NodeInfo& node) {
        if constexpr (kDistribution == Distribution::kUniform) {
            a_ = node.attr_float("low", 0.0f);
            b_ = node.attr_float("high", 1.0f);
            if (!(a_ <= b_)) node.fail(fmt::format("attribute 'low' ({}) must not exceed 'high' ({})", a_, b_));
        } else {
            a_ = node.attr_float("mean", 0.0f);
            b_ = node.attr_float("scale", 1.0f);
            if (!(b_ >= 0)) node.fail(fmt::format("attribute 'scale' must not be negative, but it is {}", b_));
        }
        if constexpr (!kLike) {
            if (!node.has_attr("shape")) node.fail("attribute 'shape' is required");
            shape_ = node.attr_ints("shape");
            for (int64_t d : shape_)
                if (d < 0) node.fail(fmt::format("attribute 'shape' values must not be negative, but one is {}", d));
            dtype_ = random_dtype(node, DataType::kFloat32);
        } else if (node.has_attr("dtype")) {
            dtype_ = random_dtype(node, DataType::kFloat32);
        }
    }

    void compute(KernelContext& context) const override {
        Shape shape = shape_;
        DataType dtype = dtype_;
        if constexpr (kLike) {
            const Tensor& like = context.required_input(0);
            shape = like.shape();
            if (dtype == DataType::kUndefined) {
                dtype = like.dtype();
                if (!dtype_is_floating(dtype) || is_float8_name(dtype)) unsupported_dtype(context.node(), dtype);
            }
        }
        std::mt19937_64 generator = make_generator(context.node());
        Tensor values(DataType::kFloat64, shape);
        double* out = values.data_as<double>();
        if constexpr (kDistribution == Distribution::kUniform) {
            std::uniform_real_distribution<double> distribution(a_, b_);
            for (int64_t i = 0; i < values.numel(); ++i) out[i] = distribution(generator);
        } else {
            std::normal_distribution<double> distribution(a_, b_);
            for (int64_t i = 0; i < values.numel(); ++i) out[i] = distribution(generator);
        }
        context.set_output(0, values.cast(dtype));
    }

private:
    static bool is_float8_name(DataType dtype) { return dtype_name(dtype).starts_with("float8"); }

    double a_ = 0, b_ = 1;
    Shape shape_;
    DataType dtype_ = DataType::kUndefined;
};

class BernoulliKernel final : public Kernel {
public:
    explicit BernoulliKernel(const NodeInfo& node) {
        if (node.has_attr("dtype")) {
            dtype_ = dtype_from_onnx(static_cast<int32_t>(node.attr_int("dtype", 1)));
            if (dtype_ == DataType::kUndefined || dtype_ == DataType::kString)
                node.fail(fmt::format("attribute 'dtype' {} is not a numeric data type", node.attr_int("dtype", 1)));
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& p = context.required_input(0);
        if (!dtype_is_floating(p.dtype())) unsupported_dtype(node, p.dtype());
        std::mt19937_64 generator = make_generator(node);
        std::uniform_real_distribution<double> uniform(0.0, 1.0);
        Tensor values(DataType::kFloat64, p.shape());
        for (int64_t i = 0; i < p.numel(); ++i) {
            const double probability = p.value_as_double(i);
            if (!(probability >= 0.0 && probability <= 1.0))
                node.fail(fmt::format("input probabilities must be in [0, 1], but one is {}", probability));
            values.data_as<double>()[i] = uniform(generator) < probability ? 1.0 : 0.0;
        }
        context.set_output(0, values.cast(dtype_ == DataType::kUndefined ? p.dtype() : dtype_));
    }

private:
    DataType dtype_ = DataType::kUndefined;
};

class MultinomialKernel final : public Kernel {
public:
    explicit MultinomialKernel(const NodeInfo& node) : samples_(node.attr_int("sample_size", 1)) {
        dtype_ = dtype_from_onnx(static_cast<int32_t>(node.attr_int("dtype", 6)));
        if (dtype_ != DataType::kInt32 && dtype_ != DataType::kInt64)
            node.fail(fmt::format("attribute 'dtype' must be int32 or int64, but it is {}", node.attr_int("dtype", 6)));
        if (samples_ < 1) node.fail(fmt::format("attribute 'sample_size' must be positive, but it is {}", samples_));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& logits = context.required_input(0);
        if (!dtype_is_floating(logits.dtype())) unsupported_dtype(node, logits.dtype());
        if (logits.rank() != 2)
            node.fail(fmt::format("input must have shape [batch, classes], but it has shape {}",
                                  shape_to_string(logits.shape())));
        const int64_t batch = logits.shape()[0], classes = logits.shape()[1];
        std::mt19937_64 generator = make_generator(node);
        Tensor values(DataType::kInt64, {batch, samples_});
        std::vector<double> weights(static_cast<std::size_t>(classes));
        for (int64_t b = 0; b < batch; ++b) {
            double top = -std::numeric_limits<double>::infinity();
            for (int64_t c = 0; c < classes; ++c) top = std::max(top, logits.value_as_double(b * classes + c));
            for (int64_t c = 0; c < classes; ++c) weights[c] = std::exp(logits.value_as_double(b * classes + c) - top);
            std::discrete_distribution<int64_t> distribution(weights.begin(), weights.end());
            for (int64_t s = 0; s < samples_; ++s)
                values.data_as<int64_t>()[b * samples_ + s] = distribution(generator);
        }
        context.set_output(0, values.cast(dtype_));
    }

private:
    int64_t samples_;
    DataType dtype_ = DataType::kInt32;
};

}  // namespace

void register_sampling_ops(OpRegistry& registry) {
    registry.add("", "GridSample", 16, kMaxOpset, make_factory<GridSampleKernel>());
    registry.add("", "AffineGrid", 20, kMaxOpset, make_factory<AffineGridKernel>());
    registry.add("", "RandomUniform", 1, kMaxOpset, make_factory<RandomKernel<Distribution::kUniform, false>>());
    registry.add("", "RandomNormal", 1, kMaxOpset, make_factory<RandomKernel<Distribution::kNormal, false>>());
    registry.add("", "RandomUniformLike", 1, kMaxOpset, make_factory<RandomKernel<Distribution::kUniform, true>>());
    registry.add("", "RandomNormalLike", 1, kMaxOpset, make_factory<RandomKernel<Distribution::kNormal, true>>());
    registry.add("", "Bernoulli", 15, kMaxOpset, make_factory<BernoulliKernel>());
    registry.add("", "Multinomial", 7, kMaxOpset, make_factory<MultinomialKernel>());
}

}  // namespace polygraphy::ref
