// Detection post-processing: NonMaxSuppression (opset 10/11+) and RoiAlign (opset 10/16+).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

// ---- NonMaxSuppression -------------------------------------------------------------------------------

struct Box {
    double y1, x1, y2, x2;  // normalized so that y1 <= y2, x1 <= x2
};

double iou(const Box& a, const Box& b) {
    const double area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
    if (area_a <= 0 || area_b <= 0) return 0.0;
    const double ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
    const double iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
    if (ih <= 0 || iw <= 0) return 0.0;
    const double intersection = ih * iw;
    return intersection / (area_a + area_b - intersection);
}

class NonMaxSuppressionKernel final : public Kernel {
public:
    explicit NonMaxSuppressionKernel(const NodeInfo& node) : center_point_box_(node.attr_int("center_point_box", 0)) {
        if (center_point_box_ != 0 && center_point_box_ != 1)
            node.fail(fmt::format("attribute 'center_point_box' must be 0 or 1, but it is {}", center_point_box_));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& boxes0 = context.required_input(0);
        const Tensor& scores0 = context.required_input(1);
        if (boxes0.rank() != 3 || boxes0.shape()[2] != 4)
            node.fail(fmt::format("boxes must have shape (batches, boxes, 4), but it has shape {}",
                                  shape_to_string(boxes0.shape())));
        if (scores0.rank() != 3 || scores0.shape()[0] != boxes0.shape()[0] || scores0.shape()[2] != boxes0.shape()[1])
            node.fail(fmt::format("scores must have shape ({}, classes, {}), but it has shape {}", boxes0.shape()[0],
                                  boxes0.shape()[1], shape_to_string(scores0.shape())));
        if (!dtype_is_floating(boxes0.dtype())) unsupported_dtype(node, boxes0.dtype(), "boxes");
        if (!dtype_is_floating(scores0.dtype())) unsupported_dtype(node, scores0.dtype(), "scores");
        auto scalar = [&](std::size_t index, std::string_view what) -> const Tensor* {
            const Tensor* tensor = context.input(index);
            if (!tensor || !tensor->defined() || tensor->numel() == 0) return nullptr;
            require_scalar(node, *tensor, what);
            return tensor;
        };
        int64_t max_per_class = 0;
        if (const Tensor* t = scalar(2, "max_output_boxes_per_class"))
            max_per_class = read_ints(node, *t, "max_output_boxes_per_class")[0];
        const Tensor* iou_tensor = scalar(3, "iou_threshold");
        const double iou_threshold = iou_tensor ? iou_tensor->value_as_double(0) : 0.0;
        if (iou_threshold < 0 || iou_threshold > 1)
            node.fail(fmt::format("iou_threshold must be in [0, 1], but it is {}", iou_threshold));
        const Tensor* score_tensor = scalar(4, "score_threshold");

        const Tensor boxes = boxes0.cast(DataType::kFloat64), scores = scores0.cast(DataType::kFloat64);
        const int64_t batches = boxes.shape()[0], count = boxes.shape()[1], classes = scores.shape()[1];
        std::vector<Box> decoded(static_cast<std::size_t>(batches * count));
        for (int64_t i = 0; i < batches * count; ++i) {
            const double* b = boxes.data_as<double>() + i * 4;
            Box box;
            if (center_point_box_) {
                box = {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
            } else {
                box = {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
            }
            decoded[i] = box;
        }
        std::vector<int64_t> selected;  // triples
        if (max_per_class > 0) {
            for (int64_t n = 0; n < batches; ++n)
                for (int64_t c = 0; c < classes; ++c) {
                    const double* s = scores.data_as<double>() + (n * classes + c) * count;
                    std::vector<int64_t> candidates;
                    for (int64_t i = 0; i < count; ++i)
                        if (!score_tensor || s[i] > score_tensor->value_as_double(0)) candidates.push_back(i);
                    std::stable_sort(candidates.begin(), candidates.end(),
                                     [&](int64_t a, int64_t b) { return s[a] > s[b]; });
                    std::vector<int64_t> kept;
                    for (int64_t candidate : candidates) {
                        if (static_cast<int64_t>(kept.size()) >= max_per_class) break;
                        bool suppressed = false;
                        for (int64_t other : kept)
                            if (iou(decoded[n * count + candidate], decoded[n * count + other]) > iou_threshold) {
                                suppressed = true;
                                break;
                            }
                        if (suppressed) continue;
                        kept.push_back(candidate);
                        selected.insert(selected.end(), {n, c, candidate});
                    }
                }
        }
        Tensor& out = context.allocate_output(0, DataType::kInt64, {static_cast<int64_t>(selected.size() / 3), 3});
        std::copy(selected.begin(), selected.end(), out.data_as<int64_t>());
    }

private:
    int64_t center_point_box_;
};

// ---- RoiAlign ----------------------------------------------------------------------------------------

class RoiAlignKernel final : public Kernel {
public:
    explicit RoiAlignKernel(const NodeInfo& node)
        : output_height_(node.attr_int("output_height", 1)),
          output_width_(node.attr_int("output_width", 1)),
          sampling_ratio_(node.attr_int("sampling_ratio", 0)),
          spatial_scale_(node.attr_float("spatial_scale", 1.0f)) {
        const std::string mode = node.attr_string("mode", "avg");
        if (mode != "avg" && mode != "max")
            node.fail(fmt::format("attribute 'mode' must be avg or max, but it is '{}'", mode));
        max_ = mode == "max";
        const std::string transform =
            node.opset() >= 16 ? node.attr_string("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
        if (transform != "half_pixel" && transform != "output_half_pixel")
            node.fail(fmt::format(
                "attribute 'coordinate_transformation_mode' must be half_pixel or output_half_pixel, but it is '{}'",
                transform));
        half_pixel_ = transform == "half_pixel";
        if (output_height_ <= 0 || output_width_ <= 0)
            node.fail(
                fmt::format("attributes 'output_height' and 'output_width' must be positive, but they are {} "
                            "and {}",
                            output_height_, output_width_));
        if (sampling_ratio_ < 0)
            node.fail(fmt::format("attribute 'sampling_ratio' must not be negative, but it is {}", sampling_ratio_));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        const Tensor& rois0 = context.required_input(1);
        const Tensor& indices0 = context.required_input(2);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        if (x0.rank() != 4)
            node.fail(fmt::format("X must have rank 4, but it has shape {}", shape_to_string(x0.shape())));
        if (rois0.rank() != 2 || rois0.shape()[1] != 4)
            node.fail(
                fmt::format("rois must have shape (num_rois, 4), but it has shape {}", shape_to_string(rois0.shape())));
        const int64_t rois_count = rois0.shape()[0];
        if (indices0.shape() != Shape{rois_count})
            node.fail(fmt::format("batch_indices must have shape ({},), but it has shape {}", rois_count,
                                  shape_to_string(indices0.shape())));
        const Tensor x = x0.cast(DataType::kFloat64), rois = rois0.cast(DataType::kFloat64);
        const std::vector<int64_t> batch_indices = read_ints(node, indices0, "batch_indices");
        const int64_t batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
        Tensor y(DataType::kFloat64, {rois_count, channels, output_height_, output_width_});
        const double offset = half_pixel_ ? 0.5 : 0.0;
        for (int64_t r = 0; r < rois_count; ++r) {
            const int64_t n = batch_indices[r];
            if (n < 0 || n >= batch)
                node.fail(fmt::format("batch_indices value {} is out of range for a batch of {}", n, batch));
            const double* roi = rois.data_as<double>() + r * 4;
            for (int k = 0; k < 4; ++k)
                if (!std::isfinite(roi[k])) node.fail(fmt::format("rois[{}] holds a non-finite coordinate", r));
            const double start_w = roi[0] * spatial_scale_ - offset, start_h = roi[1] * spatial_scale_ - offset;
            const double end_w = roi[2] * spatial_scale_ - offset, end_h = roi[3] * spatial_scale_ - offset;
            double roi_w = end_w - start_w, roi_h = end_h - start_h;
            if (!half_pixel_) {
                roi_w = std::max(roi_w, 1.0);
                roi_h = std::max(roi_h, 1.0);
            }
            const double bin_h = roi_h / static_cast<double>(output_height_);
            const double bin_w = roi_w / static_cast<double>(output_width_);
            const int64_t grid_h = sampling_ratio_ > 0
                                       ? sampling_ratio_
                                       : static_cast<int64_t>(std::ceil(roi_h / static_cast<double>(output_height_)));
            const int64_t grid_w = sampling_ratio_ > 0
                                       ? sampling_ratio_
                                       : static_cast<int64_t>(std::ceil(roi_w / static_cast<double>(output_width_)));
            const double samples = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
            for (int64_t c = 0; c < channels; ++c) {
                const double* plane = x.data_as<double>() + (n * channels + c) * height * width;
                for (int64_t ph = 0; ph < output_height_; ++ph)
                    for (int64_t pw = 0; pw < output_width_; ++pw) {
                        double accumulated = 0;
                        bool first = true;
                        for (int64_t iy = 0; iy < grid_h; ++iy) {
                            const double yy = start_h + ph * bin_h + (iy + 0.5) * bin_h / static_cast<double>(grid_h);
                            for (int64_t ix = 0; ix < grid_w; ++ix) {
                                const double xx =
                                    start_w + pw * bin_w + (ix + 0.5) * bin_w / static_cast<double>(grid_w);
                                accumulate(plane, height, width, yy, xx, accumulated, first);
                            }
                        }
                        y.data_as<double>()[((r * channels + c) * output_height_ + ph) * output_width_ + pw] =
                            max_ ? accumulated : accumulated / samples;
                    }
            }
        }
        context.set_output(0, y.cast(x0.dtype()));
    }

private:
    // Bilinear sample at (y, x) (zero outside [-1, size]); avg sums samples, max keeps the largest
    // weighted corner the way the ONNX reference (and ONNX Runtime) define max mode.
    void accumulate(const double* plane, int64_t height, int64_t width, double y, double x, double& accumulated,
                    bool& first) const {
        if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width)) {
            if (max_) {
                if (first) accumulated = 0, first = false;
                accumulated = std::max(accumulated, 0.0);
            }
            return;
        }
        y = std::max(y, 0.0);
        x = std::max(x, 0.0);
        auto y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
        int64_t y_high, x_high;
        if (y_low >= height - 1) {
            y_high = y_low = height - 1;
            y = static_cast<double>(y_low);
        } else {
            y_high = y_low + 1;
        }
        if (x_low >= width - 1) {
            x_high = x_low = width - 1;
            x = static_cast<double>(x_low);
        } else {
            x_high = x_low + 1;
        }
        const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
        const double hy = 1 - ly, hx = 1 - lx;
        const double w1 = hy * hx, w2 = hy * lx, w3 = ly * hx, w4 = ly * lx;
        const double v1 = plane[y_low * width + x_low], v2 = plane[y_low * width + x_high];
        const double v3 = plane[y_high * width + x_low], v4 = plane[y_high * width + x_high];
        if (max_) {
            const double value = std::max({w1 * v1, w2 * v2, w3 * v3, w4 * v4});
            accumulated = first ? value : std::max(accumulated, value);
            first = false;
        } else {
            accumulated += w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4;
        }
    }

    int64_t output_height_, output_width_, sampling_ratio_;
    double spatial_scale_;
    bool max_ = false, half_pixel_ = true;
};

}  // namespace

void register_detection_ops(OpRegistry& registry) {
    registry.add("", "NonMaxSuppression", 10, kMaxOpset, make_factory<NonMaxSuppressionKernel>());
    registry.add("", "RoiAlign", 10, kMaxOpset, make_factory<RoiAlignKernel>());
}

}  // namespace polygraphy::ref
