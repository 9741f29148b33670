// Signal processing: DFT (opset 17: axis attribute; opset 20: axis input), STFT, MelWeightMatrix and the windows
// HannWindow, HammingWindow, BlackmanWindow. Transforms are direct O(n^2) sums in double with exact twiddle angles
// (2*pi*(k*n mod N)/N), rounded to the input's type at the end.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

constexpr double kPi = 3.14159265358979323846;

// One transform of `length` complex samples read through `in(n)` (zero past `available`), writing
// `bins` outputs through `out(k, re, im)`.
template <typename In, typename Out>
void dft_1d(int64_t length, int64_t available, int64_t bins, bool inverse, In&& in, Out&& out) {
    for (int64_t k = 0; k < bins; ++k) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < std::min(length, available); ++n) {
            const auto [xr, xi] = in(n);
            const double angle = 2.0 * kPi * static_cast<double>((k * n) % length) / static_cast<double>(length);
            const double c = std::cos(angle), s = inverse ? std::sin(angle) : -std::sin(angle);
            re += xr * c - xi * s;
            im += xr * s + xi * c;
        }
        if (inverse) {
            re /= static_cast<double>(length);
            im /= static_cast<double>(length);
        }
        out(k, re, im);
    }
}

class DftKernel final : public Kernel {
public:
    explicit DftKernel(const NodeInfo& node)
        : inverse_(node.attr_int("inverse", 0) != 0), onesided_(node.attr_int("onesided", 0) != 0) {
        if (node.opset() < 20) axis_attr_ = node.attr_int("axis", 1);
        if (inverse_ && onesided_) node.fail("attributes 'inverse' and 'onesided' cannot both be 1");
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        const int64_t rank = x0.rank();
        if (rank < 3 || (x0.shape().back() != 1 && x0.shape().back() != 2))
            node.fail(fmt::format("input must have shape [batch, ..., signal, 1 or 2], but it has shape {}",
                                  shape_to_string(x0.shape())));
        int64_t axis = axis_attr_;
        if (context.node().opset() >= 20) {
            axis = -2;
            if (const Tensor* a = context.input(2); a && a->defined()) {
                require_scalar(node, *a, "axis");
                axis = read_ints(node, *a, "axis")[0];
            }
        }
        if (axis < 0) axis += rank;
        if (axis < 1 || axis > rank - 2)
            node.fail(fmt::format("axis must name a signal dimension in [1, {}] (or [-{}, -2]), but it is {}", rank - 2,
                                  rank - 1, axis));
        int64_t length = x0.shape()[axis];
        if (const Tensor* l = context.input(1); l && l->defined() && l->numel() > 0) {
            require_scalar(node, *l, "dft_length");
            length = read_ints(node, *l, "dft_length")[0];
            if (length <= 0) node.fail(fmt::format("dft_length must be positive, but it is {}", length));
        }
        const bool complex = x0.shape().back() == 2;
        const int64_t bins = onesided_ ? length / 2 + 1 : length;
        const Tensor x = x0.cast(DataType::kFloat64);
        Shape out_shape = x.shape();
        out_shape[axis] = bins;
        out_shape.back() = 2;
        Tensor y(DataType::kFloat64, out_shape);
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
        for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.shape()[d];
        const int64_t available = x.shape()[axis], channels = x.shape().back();
        const double* in = x.data_as<double>();
        double* out = y.data_as<double>();
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i)
                dft_1d(
                    length, available, bins, inverse_,
                    [&](int64_t n) {
                        const double* p = in + ((o * available + n) * inner + i) * channels;
                        return std::pair<double, double>{p[0], complex ? p[1] : 0.0};
                    },
                    [&](int64_t k, double re, double im) {
                        double* p = out + ((o * bins + k) * inner + i) * 2;
                        p[0] = re;
                        p[1] = im;
                    });
        context.set_output(0, y.cast(x0.dtype()));
    }

private:
    bool inverse_, onesided_;
    int64_t axis_attr_ = 1;
};

class StftKernel final : public Kernel {
public:
    explicit StftKernel(const NodeInfo& node) : onesided_(node.attr_int("onesided", 1) != 0) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& signal0 = context.required_input(0);
        if (!dtype_is_floating(signal0.dtype())) unsupported_dtype(node, signal0.dtype());
        if (signal0.rank() != 3 || (signal0.shape()[2] != 1 && signal0.shape()[2] != 2))
            node.fail(fmt::format("signal must have shape [batch, length, 1 or 2], but it has shape {}",
                                  shape_to_string(signal0.shape())));
        const Tensor& step_tensor = context.required_input(1);
        require_scalar(node, step_tensor, "frame_step");
        const int64_t step = read_ints(node, step_tensor, "frame_step")[0];
        if (step <= 0) node.fail(fmt::format("frame_step must be positive, but it is {}", step));
        const Tensor* window0 = context.input(2);
        if (window0 && !window0->defined()) window0 = nullptr;
        int64_t frame_length = window0 ? window0->numel() : 0;
        if (const Tensor* l = context.input(3); l && l->defined()) {
            require_scalar(node, *l, "frame_length");
            frame_length = read_ints(node, *l, "frame_length")[0];
        }
        if (frame_length <= 0) node.fail("frame_length (or a window) must be given and positive");
        if (window0 && window0->numel() != frame_length)
            node.fail(fmt::format("window has {} values, but frame_length is {}", window0->numel(), frame_length));
        const int64_t batch = signal0.shape()[0], length = signal0.shape()[1], channels = signal0.shape()[2];
        if (length < frame_length)
            node.fail(fmt::format("signal length {} is shorter than frame_length {}", length, frame_length));
        const int64_t frames = 1 + (length - frame_length) / step;
        const int64_t bins = onesided_ ? frame_length / 2 + 1 : frame_length;
        const Tensor signal = signal0.cast(DataType::kFloat64);
        const Tensor window = window0 ? window0->cast(DataType::kFloat64) : Tensor();
        Tensor y(DataType::kFloat64, {batch, frames, bins, 2});
        const double* in = signal.data_as<double>();
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t f = 0; f < frames; ++f)
                dft_1d(
                    frame_length, frame_length, bins, false,
                    [&](int64_t n) {
                        const double* p = in + (b * length + f * step + n) * channels;
                        const double w = window.defined() ? window.data_as<double>()[n] : 1.0;
                        return std::pair<double, double>{p[0] * w, channels == 2 ? p[1] * w : 0.0};
                    },
                    [&](int64_t k, double re, double im) {
                        double* p = y.data_as<double>() + ((b * frames + f) * bins + k) * 2;
                        p[0] = re;
                        p[1] = im;
                    });
        context.set_output(0, y.cast(signal0.dtype()));
    }

private:
    bool onesided_;
};

class MelWeightMatrixKernel final : public Kernel {
public:
    explicit MelWeightMatrixKernel(const NodeInfo& node) {
        output_ = dtype_from_onnx(static_cast<int32_t>(node.attr_int("output_datatype", 1)));
        if (output_ == DataType::kUndefined || output_ == DataType::kString)
            node.fail(fmt::format("attribute 'output_datatype' {} is not a numeric data type",
                                  node.attr_int("output_datatype", 1)));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        auto integer = [&](std::size_t index, std::string_view what) {
            const Tensor& t = context.required_input(index);
            require_scalar(node, t, what);
            return read_ints(node, t, what)[0];
        };
        auto real = [&](std::size_t index, std::string_view what) {
            const Tensor& t = context.required_input(index);
            require_scalar(node, t, what);
            return t.value_as_double(0);
        };
        const int64_t mel_bins = integer(0, "num_mel_bins"), dft_length = integer(1, "dft_length");
        const int64_t sample_rate = integer(2, "sample_rate");
        const double lower = real(3, "lower_edge_hertz"), upper = real(4, "upper_edge_hertz");
        if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0)
            node.fail(fmt::format("num_mel_bins {}, dft_length {} and sample_rate {} must be positive", mel_bins,
                                  dft_length, sample_rate));
        if (lower < 0 || upper < lower)
            node.fail(fmt::format(
                "edges must satisfy 0 <= lower_edge_hertz <= upper_edge_hertz, but they are {} and {}", lower, upper));
        const int64_t spectrogram_bins = dft_length / 2 + 1;
        const double low_mel = 2595.0 * std::log10(1.0 + lower / 700.0);
        const double high_mel = 2595.0 * std::log10(1.0 + upper / 700.0);
        const double mel_step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
        std::vector<int64_t> points(static_cast<std::size_t>(mel_bins + 2));
        for (int64_t i = 0; i < mel_bins + 2; ++i) {
            const double hertz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * mel_step + low_mel) / 2595.0) - 1.0);
            points[i] = static_cast<int64_t>(
                std::floor(static_cast<double>(dft_length + 1) * hertz / static_cast<double>(sample_rate)));
        }
        Tensor y(DataType::kFloat64, {spectrogram_bins, mel_bins});
        double* out = y.data_as<double>();
        auto set = [&](int64_t row, int64_t column, double value) {
            if (row >= 0 && row < spectrogram_bins) out[row * mel_bins + column] = value;
        };
        for (int64_t i = 0; i < mel_bins; ++i) {
            const int64_t low = points[i], center = points[i + 1], high = points[i + 2];
            if (center == low) {
                set(center, i, 1.0);
            } else {
                for (int64_t j = low; j <= center; ++j)
                    set(j, i, static_cast<double>(j - low) / static_cast<double>(center - low));
            }
            if (high > center)
                for (int64_t j = center; j < high; ++j)
                    set(j, i, static_cast<double>(high - j) / static_cast<double>(high - center));
        }
        context.set_output(0, y.cast(output_));
    }

private:
    DataType output_;
};

// ---- Windows ------------------------------------------------------------------------------------------

enum class WindowKind { kHann, kHamming, kBlackman };

template <WindowKind Kind>
class WindowKernel final : public Kernel {
public:
    explicit WindowKernel(const NodeInfo& node)
        : dtype_(output_dtype_attr(node, "output_datatype", DataType::kFloat32)),
          periodic_(node.attr_int("periodic", 1) != 0) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& size_tensor = context.required_input(0);
        require_scalar(node, size_tensor, "size");
        const int64_t size = read_ints(node, size_tensor, "size")[0];
        if (size < 0) node.fail("size must be non-negative, but it is " + std::to_string(size));
        const double denominator = periodic_ ? static_cast<double>(size) : static_cast<double>(size - 1);
        std::vector<double> values(static_cast<std::size_t>(size));
        for (int64_t n = 0; n < size; ++n) {
            const double phase = denominator > 0 ? 2 * kPi * static_cast<double>(n) / denominator : 0.0;
            double v = 0.0;
            if constexpr (Kind == WindowKind::kHann) v = 0.5 - 0.5 * std::cos(phase);
            else if constexpr (Kind == WindowKind::kHamming) v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(phase);
            else v = 0.42 - 0.5 * std::cos(phase) + 0.08 * std::cos(2 * phase);
            values[static_cast<std::size_t>(n)] = v;
        }
        context.set_output(0, Tensor::from_doubles(dtype_, {size}, values));
    }

private:
    DataType dtype_;
    bool periodic_;
};

}  // namespace

void register_signal_ops(OpRegistry& registry) {
    registry.add("", "DFT", 17, kMaxOpset, make_factory<DftKernel>());
    registry.add("", "STFT", 17, kMaxOpset, make_factory<StftKernel>());
    registry.add("", "MelWeightMatrix", 17, kMaxOpset, make_factory<MelWeightMatrixKernel>());
    registry.add("", "HannWindow", 17, kMaxOpset, make_factory<WindowKernel<WindowKind::kHann>>());
    registry.add("", "HammingWindow", 17, kMaxOpset, make_factory<WindowKernel<WindowKind::kHamming>>());
    registry.add("", "BlackmanWindow", 17, kMaxOpset, make_factory<WindowKernel<WindowKind::kBlackman>>());
}

}  // namespace polygraphy::ref
