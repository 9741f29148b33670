// Image operators: Resize (opsets 10 to 19: nearest / linear / cubic, every coordinate transformation
// mode, scales or sizes, axes, keep_aspect_ratio_policy, antialias, exclude_outside), Upsample (7-9)
// and ImageDecoder (opset 20; the decoders are compute/image_codecs.h).
//
// Resize is separable: each output coordinate along each axis maps to a few input indices with weights
// (the "taps"), computed once per axis following the ONNX reference implementation (neighbours beyond
// the edge repeat the edge value). The output is the weighted sum over the product of every axis' taps.
// Values are computed in double and cast back to the input's dtype.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/ref/compute/image_codecs.h"
#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Transform {
    kHalfPixel,
    kHalfPixelSymmetric,
    kPytorchHalfPixel,
    kAlignCorners,
    kAsymmetric,
    kTfHalfPixelForNn,
    kTfCropAndResize
};
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

struct Tap {
    int64_t index;
    double weight;
};

/// Taps of one output coordinate along one axis; `extrapolate` when it falls outside the crop
/// region of tf_crop_and_resize (the output is then extrapolation_value).
struct AxisTaps {
    std::vector<Tap> taps;
    bool extrapolate = false;
};

struct ResizeConfig {
    Mode mode = Mode::kNearest;
    Transform transform = Transform::kHalfPixel;
    NearestMode nearest = NearestMode::kRoundPreferFloor;
    AspectPolicy policy = AspectPolicy::kStretch;
    double cubic_a = -0.75;
    bool exclude_outside = false;
    bool antialias = false;
    double extrapolation_value = 0.0;
};

double cubic_weight(double x, double a) {
    x = std::abs(x);
    if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
}

/// Weights for the input indices floor + start .. floor + start + n - 1 of a coordinate whose
/// fractional part is `ratio` (1 for integers, whose "floor" is then the index below).
void coefficients(const ResizeConfig& config, double ratio, double scale, int64_t& start, std::vector<double>& coeffs) {
    coeffs.clear();
    switch (config.mode) {
        case Mode::kNearest: {
            start = 0;
            bool upper = true;
            if (ratio != 1.0) {
                switch (config.nearest) {
                    case NearestMode::kRoundPreferFloor: upper = ratio > 0.5; break;
                    case NearestMode::kRoundPreferCeil: upper = ratio >= 0.5; break;
                    case NearestMode::kFloor: upper = false; break;
                    case NearestMode::kCeil: upper = true; break;
                }
            }
            coeffs = {upper ? 0.0 : 1.0, upper ? 1.0 : 0.0};
            return;
        }
        case Mode::kLinear: {
            const double s = config.antialias ? std::min(scale, 1.0) : 1.0;
            start = static_cast<int64_t>(std::floor(-1.0 / s)) + 1;
            const int64_t footprint = 2 - 2 * start;
            double sum = 0.0;
            for (int64_t i = start; i < start + footprint; ++i) {
                coeffs.push_back(std::clamp(1.0 - std::abs((static_cast<double>(i) - ratio) * s), 0.0, 1.0));
                sum += coeffs.back();
            }
            if (config.antialias)
                for (double& c : coeffs) c /= sum;
            return;
        }
        case Mode::kCubic: {
            const double s = config.antialias ? std::min(scale, 1.0) : 1.0;
            start = config.antialias ? static_cast<int64_t>(std::floor(-2.0 / s)) + 1 : -1;
            const int64_t end = 2 - start;
            double sum = 0.0;
            for (int64_t i = start; i < end; ++i) {
                coeffs.push_back(cubic_weight(s * (static_cast<double>(i) - ratio), config.cubic_a));
                sum += coeffs.back();
            }
            if (config.antialias)
                for (double& c : coeffs) c /= sum;
            return;
        }
    }
}

/// Taps of every output coordinate of one axis.
std::vector<AxisTaps> axis_taps(const ResizeConfig& config, int64_t in_len, int64_t out_len, double scale,
                                double roi_start, double roi_end) {
    std::vector<AxisTaps> result(static_cast<std::size_t>(out_len));
    const double out_width = scale * static_cast<double>(in_len);  // fractional, as in the reference
    const double in_width = static_cast<double>(in_len);
    std::vector<double> coeffs;
    for (int64_t o = 0; o < out_len; ++o) {
        const double x = static_cast<double>(o);
        double x_ori = 0.0;
        AxisTaps& axis = result[static_cast<std::size_t>(o)];
        switch (config.transform) {
            case Transform::kAsymmetric: x_ori = x / scale; break;
            case Transform::kHalfPixel: x_ori = (x + 0.5) / scale - 0.5; break;
            case Transform::kPytorchHalfPixel: x_ori = out_width == 1.0 ? -0.5 : (x + 0.5) / scale - 0.5; break;
            case Transform::kHalfPixelSymmetric: {
                const double adjustment = static_cast<double>(out_len) / out_width;
                const double offset = in_width / 2 * (1 - adjustment);
                x_ori = offset + (x + 0.5) / scale - 0.5;
                break;
            }
            case Transform::kAlignCorners: x_ori = out_width == 1.0 ? 0.0 : x * (in_width - 1) / (out_width - 1); break;
            case Transform::kTfHalfPixelForNn: x_ori = (x + 0.5) / scale; break;
            case Transform::kTfCropAndResize:
                x_ori = out_width == 1.0 ? (roi_end - roi_start) * (in_width - 1) / 2
                                         : x * (roi_end - roi_start) * (in_width - 1) / (out_width - 1);
                x_ori += roi_start * (in_width - 1);
                if (x_ori < 0 || x_ori > in_width - 1) {
                    axis.extrapolate = true;
                    continue;
                }
                break;
        }
        double floor_x = std::floor(x_ori);
        double ratio = x_ori - floor_x;
        if (ratio == 0.0) {  // integers: the reference's ratio 1 over the index below
            floor_x -= 1;
            ratio = 1.0;
        }
        int64_t start = 0;
        coefficients(config, ratio, scale, start, coeffs);
        double sum = 0.0;
        for (std::size_t k = 0; k < coeffs.size(); ++k) {
            const int64_t index = static_cast<int64_t>(floor_x) + start + static_cast<int64_t>(k);
            if (config.exclude_outside && (index < 0 || index >= in_len)) coeffs[k] = 0.0;
            sum += coeffs[k];
        }
        for (std::size_t k = 0; k < coeffs.size(); ++k) {
            double weight = coeffs[k];
            if (config.exclude_outside) weight /= sum;
            if (weight == 0.0) continue;
            const int64_t index = static_cast<int64_t>(floor_x) + start + static_cast<int64_t>(k);
            axis.taps.push_back({std::clamp<int64_t>(index, 0, in_len - 1), weight});
        }
    }
    return result;
}

Tensor resize(const NodeInfo& node, const ResizeConfig& config, const Tensor& x, const Shape& out_shape,
              const std::vector<double>& scales, const std::vector<double>& roi) {
    const std::size_t rank = out_shape.size();
    std::vector<std::vector<AxisTaps>> taps(rank);
    for (std::size_t d = 0; d < rank; ++d)
        taps[d] = axis_taps(config, x.shape()[d], out_shape[d], scales[d], roi[d], roi[rank + d]);
    const Tensor wide = x.cast(DataType::kFloat64);
    const double* in = wide.data_as<double>();
    const std::vector<int64_t> in_strides = [&] {
        std::vector<int64_t> s(rank, 1);
        for (std::size_t i = rank; i > 1; --i) s[i - 2] = s[i - 1] * x.shape()[i - 1];
        return s;
    }();
    std::vector<double> out(static_cast<std::size_t>(shape_volume(out_shape)));
    if (x.numel() == 0 && !out.empty()) node.fail("cannot resize an empty input to a non-empty output");
    std::vector<int64_t> coord(rank, 0);
    std::vector<const AxisTaps*> current(rank);
    // Weighted sum over the product of the axes' taps, one axis per recursion level.
    auto accumulate = [&](auto&& self, std::size_t d, int64_t offset, double weight) -> double {
        if (d == rank) return weight * in[offset];
        double sum = 0.0;
        for (const Tap& tap : current[d]->taps) sum += self(self, d + 1, offset + tap.index * in_strides[d], weight * tap.weight);
        return sum;
    };
    for (std::size_t i = 0; i < out.size(); ++i) {
        bool extrapolate = false;
        for (std::size_t d = 0; d < rank; ++d) {
            current[d] = &taps[d][static_cast<std::size_t>(coord[d])];
            extrapolate = extrapolate || current[d]->extrapolate;
        }
        out[i] = extrapolate ? config.extrapolation_value : accumulate(accumulate, 0, 0, 1.0);
        for (std::size_t d = rank; d-- > 0;) {
            if (++coord[d] < out_shape[d]) break;
            coord[d] = 0;
        }
    }
    return Tensor::from_doubles(x.dtype(), out_shape, out);
}

std::vector<double> read_floats(const NodeInfo& node, const Tensor& tensor, const char* what) {
    if (tensor.dtype() != DataType::kFloat32 && tensor.dtype() != DataType::kFloat64 &&
        tensor.dtype() != DataType::kFloat16 && tensor.dtype() != DataType::kBFloat16)
        node.fail(std::string(what) + " must be a float tensor, but it is " + std::string(dtype_name(tensor.dtype())));
    std::vector<double> values;
    for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.value_as_double(i));
    return values;
}

void check_not_bool_or_string(const NodeInfo& node, const Tensor& x) {
    if (x.dtype() == DataType::kString || x.dtype() == DataType::kBool) unsupported_dtype(node, x.dtype());
}

class ResizeKernel final : public Kernel {
public:
    explicit ResizeKernel(const NodeInfo& node) : opset_(node.opset()) {
        const std::string mode = node.attr_string("mode", "nearest");
        if (mode == "nearest")
            config_.mode = Mode::kNearest;
        else if (mode == "linear" || (opset_ <= 10 && mode == "bilinear"))
            config_.mode = Mode::kLinear;
        else if (mode == "cubic" && opset_ >= 11)
            config_.mode = Mode::kCubic;
        else
            node.fail("attribute 'mode' must be 'nearest', 'linear' or 'cubic', but it is '" + mode + "'");
        if (opset_ <= 10) {
            // Resize-10 and Upsample: asymmetric coordinates, nearest rounds down.
            config_.transform = Transform::kAsymmetric;
            config_.nearest = NearestMode::kFloor;
            if (node.has_attr("scales")) upsample_scales_ = node.attr_floats("scales");
            return;
        }
        const std::string transform = node.attr_string("coordinate_transformation_mode", "half_pixel");
        if (transform == "half_pixel")
            config_.transform = Transform::kHalfPixel;
        else if (transform == "half_pixel_symmetric" && opset_ >= 19)
            config_.transform = Transform::kHalfPixelSymmetric;
        else if (transform == "pytorch_half_pixel")
            config_.transform = Transform::kPytorchHalfPixel;
        else if (transform == "align_corners")
            config_.transform = Transform::kAlignCorners;
        else if (transform == "asymmetric")
            config_.transform = Transform::kAsymmetric;
        else if (transform == "tf_half_pixel_for_nn" && opset_ <= 12)
            config_.transform = Transform::kTfHalfPixelForNn;
        else if (transform == "tf_crop_and_resize")
            config_.transform = Transform::kTfCropAndResize;
        else
            node.fail("attribute 'coordinate_transformation_mode' has unsupported value '" + transform + "'");
        const std::string nearest = node.attr_string("nearest_mode", "round_prefer_floor");
        if (nearest == "round_prefer_floor")
            config_.nearest = NearestMode::kRoundPreferFloor;
        else if (nearest == "round_prefer_ceil")
            config_.nearest = NearestMode::kRoundPreferCeil;
        else if (nearest == "floor")
            config_.nearest = NearestMode::kFloor;
        else if (nearest == "ceil")
            config_.nearest = NearestMode::kCeil;
        else
            node.fail("attribute 'nearest_mode' has unsupported value '" + nearest + "'");
        config_.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
        config_.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
        config_.extrapolation_value = node.attr_float("extrapolation_value", 0.0f);
        if (opset_ >= 18) {
            config_.antialias = node.attr_int("antialias", 0) != 0;
            axes_ = node.attr_ints("axes");
            const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
            if (policy == "stretch")
                config_.policy = AspectPolicy::kStretch;
            else if (policy == "not_larger")
                config_.policy = AspectPolicy::kNotLarger;
            else if (policy == "not_smaller")
                config_.policy = AspectPolicy::kNotSmaller;
            else
                node.fail("attribute 'keep_aspect_ratio_policy' has unsupported value '" + policy + "'");
        }
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x = context.required_input(0);
        check_not_bool_or_string(node, x);
        const int64_t rank = x.rank();
        const Shape& in_shape = x.shape();

        std::vector<int64_t> axes;
        if (axes_.empty()) {
            for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
        } else {
            axes = normalize_axes(node, axes_, rank);
        }
        const std::size_t n = axes.size();

        std::vector<double> given_scales;
        std::vector<int64_t> given_sizes;
        std::vector<double> given_roi;
        if (opset_ <= 10) {
            given_scales = context.num_inputs() > 1 ? read_floats(node, context.required_input(1), "scales")
                                                    : std::vector<double>(upsample_scales_.begin(), upsample_scales_.end());
        } else {
            if (const Tensor* roi = context.input(1); roi != nullptr && roi->numel() > 0)
                given_roi = read_floats(node, *roi, "roi");
            if (const Tensor* scales = context.input(2); scales != nullptr && scales->numel() > 0)
                given_scales = read_floats(node, *scales, "scales");
            if (const Tensor* sizes = context.input(3); sizes != nullptr && sizes->numel() > 0)
                given_sizes = read_ints(node, *sizes, "sizes");
            if (given_scales.empty() == given_sizes.empty())
                node.fail("exactly one of 'scales' and 'sizes' must be given (non-empty)");
        }
        if (!given_scales.empty() && given_scales.size() != n)
            node.fail("scales must have " + std::to_string(n) + " elements, but it has " +
                      std::to_string(given_scales.size()));
        if (!given_sizes.empty() && given_sizes.size() != n)
            node.fail("sizes must have " + std::to_string(n) + " elements, but it has " +
                      std::to_string(given_sizes.size()));

        std::vector<double> scales(static_cast<std::size_t>(rank), 1.0);
        Shape out_shape = in_shape;
        if (!given_scales.empty()) {
            for (std::size_t i = 0; i < n; ++i) {
                if (!(given_scales[i] > 0))
                    node.fail("scales must be positive, but scale " + std::to_string(i) + " is " +
                              std::to_string(given_scales[i]));
                const auto d = static_cast<std::size_t>(axes[i]);
                scales[d] = given_scales[i];
                out_shape[d] = static_cast<int64_t>(given_scales[i] * static_cast<double>(in_shape[d]));
            }
        } else {
            for (std::size_t i = 0; i < n; ++i) {
                if (given_sizes[i] < 0) node.fail("sizes must be non-negative");
                const auto d = static_cast<std::size_t>(axes[i]);
                scales[d] = static_cast<double>(given_sizes[i]) / static_cast<double>(in_shape[d]);
            }
            if (config_.policy != AspectPolicy::kStretch) {
                double scale = config_.policy == AspectPolicy::kNotLarger ? INFINITY : -INFINITY;
                for (int64_t d : axes)
                    scale = config_.policy == AspectPolicy::kNotLarger ? std::min(scale, scales[d]) : std::max(scale, scales[d]);
                for (int64_t d : axes) {
                    scales[d] = scale;
                    out_shape[d] = static_cast<int64_t>(scale * static_cast<double>(in_shape[d]) + 0.5);
                }
            } else {
                for (std::size_t i = 0; i < n; ++i) out_shape[static_cast<std::size_t>(axes[i])] = given_sizes[i];
            }
        }
        for (std::size_t d = 0; d < out_shape.size(); ++d)
            if (in_shape[d] == 0 && out_shape[d] != 0) node.fail("cannot resize an empty dimension");

        std::vector<double> roi(2 * static_cast<std::size_t>(rank), 0.0);
        for (int64_t d = 0; d < rank; ++d) roi[static_cast<std::size_t>(rank + d)] = 1.0;
        if (config_.transform == Transform::kTfCropAndResize && !given_roi.empty()) {
            if (given_roi.size() != 2 * n)
                node.fail("roi must have " + std::to_string(2 * n) + " elements, but it has " +
                          std::to_string(given_roi.size()));
            for (std::size_t i = 0; i < n; ++i) {
                roi[static_cast<std::size_t>(axes[i])] = given_roi[i];
                roi[static_cast<std::size_t>(rank + axes[i])] = given_roi[n + i];
            }
        }
        context.set_output(0, resize(node, config_, x, out_shape, scales, roi));
    }

private:
    int64_t opset_;
    ResizeConfig config_;
    std::vector<int64_t> axes_;
    std::vector<float> upsample_scales_;  // Upsample-7's attribute
};

}  // namespace

namespace {

// ---- ImageDecoder ------------------------------------------------------------------------------------

class ImageDecoderKernel final : public Kernel {
public:
    explicit ImageDecoderKernel(const NodeInfo& node) : format_(node.attr_string("pixel_format", "RGB")) {
        if (format_ != "RGB" && format_ != "BGR" && format_ != "Grayscale")
            node.fail(fmt::format("attribute 'pixel_format' must be RGB, BGR or Grayscale, but it is '{}'", format_));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& stream = context.required_input(0);
        if (stream.dtype() != DataType::kUInt8 || stream.rank() != 1)
            node.fail(fmt::format("input must be a 1-D uint8 tensor, but it is {} of shape {}",
                                  dtype_name(stream.dtype()), shape_to_string(stream.shape())));
        const auto* data = stream.data_as<uint8_t>();
        const auto size = static_cast<std::size_t>(stream.numel());
        const ImageFormat format = detect_image_format(data, size);
        if (format == ImageFormat::kUnknown)
            node.fail("the stream is no BMP, PNM, JPEG, PNG, TIFF, WebP or JPEG 2000 image");
        DecodedImage image;
        try {
            image = decode_image(format, data, size);
        } catch (const InputError& error) {
            node.fail(error.what());
        } catch (const UnsupportedError& error) {
            throw UnsupportedError(fmt::format("Node '{}' (ImageDecoder): {}", node.name(), error.what()));
        }
        const int64_t pixels = image.height * image.width;
        if (format_ == "Grayscale") {
            // ITU-R 601-2 luma, as PIL's convert("L") computes it: (R*299 + G*587 + B*114) / 1000.
            Tensor& y = context.allocate_output(0, DataType::kUInt8, {image.height, image.width, 1});
            for (int64_t i = 0; i < pixels; ++i) {
                const uint8_t* p = &image.rgb[static_cast<std::size_t>(i * 3)];
                y.data_as<uint8_t>()[i] = static_cast<uint8_t>((p[0] * 299 + p[1] * 587 + p[2] * 114 + 500) / 1000);
            }
            return;
        }
        Tensor& y = context.allocate_output(0, DataType::kUInt8, {image.height, image.width, 3});
        uint8_t* out = y.data_as<uint8_t>();
        for (int64_t i = 0; i < pixels; ++i)
            for (int c = 0; c < 3; ++c)
                out[i * 3 + c] = image.rgb[static_cast<std::size_t>(i * 3 + (format_ == "BGR" ? 2 - c : c))];
    }

private:
    std::string format_;
};

}  // namespace

void register_image_ops(OpRegistry& registry) {
    registry.add("", "ImageDecoder", 20, kMaxOpset, make_factory<ImageDecoderKernel>());
    registry.add("", "Resize", 10, kMaxOpset, make_factory<ResizeKernel>());
    registry.add("", "Upsample", 7, 9, make_factory<ResizeKernel>());
}

}  // namespace polygraphy::ref
