// Sliding-window attributes shared by Conv, ConvTranspose and the pooling operators: parsing and
// validation (at kernel creation) and output-size/padding resolution (per input shape).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/kernel_util.h"

namespace polygraphy::ref::window {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

/// Attributes as written on the node, validated. Empty vectors mean "not given" (defaults apply once
/// the number of spatial dims is known).
struct WindowAttrs {
    AutoPad auto_pad = AutoPad::kNotSet;
    std::vector<int64_t> kernel_shape;
    std::vector<int64_t> strides;
    std::vector<int64_t> dilations;
    std::vector<int64_t> pads;  ///< [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
    bool ceil_mode = false;

    /// Number of spatial dims implied by the attributes, or -1 when none of them is given.
    int64_t spatial_rank() const;
};

/// Reads auto_pad, kernel_shape, strides, dilations, pads and ceil_mode (those the op has) and checks
/// them: known auto_pad value, positive kernel/strides/dilations, non-negative pads, consistent
/// lengths. Fails naming the attribute at fault.
WindowAttrs parse_window_attrs(const NodeInfo& node, bool kernel_shape_required, bool has_dilations,
                               bool has_ceil_mode);

/// A window resolved for one input: everything has `spatial rank` entries.
struct Geometry {
    std::vector<int64_t> input;
    std::vector<int64_t> output;
    std::vector<int64_t> kernel;
    std::vector<int64_t> strides;
    std::vector<int64_t> dilations;
    std::vector<int64_t> pad_begin;
    std::vector<int64_t> pad_end;

    std::size_t rank() const { return input.size(); }
    /// Extent of the dilated kernel along `dim`.
    int64_t effective_kernel(std::size_t dim) const { return (kernel[dim] - 1) * dilations[dim] + 1; }
};

/// Resolves the window of a convolution or pooling over `input_spatial` with kernel `kernel`
/// (attribute or weight dims). Output sizes follow the ONNX spec: floor (or ceil with ceil_mode,
/// dropping a last window that would start in the end padding), SAME_* giving ceil(in / stride).
/// Fails naming the node when the input is too small for the window.
Geometry resolve_geometry(const NodeInfo& node, const WindowAttrs& attrs, const std::vector<int64_t>& input_spatial,
                          const std::vector<int64_t>& kernel);

/// Python-style floor division (b > 0).
inline int64_t floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}
/// Ceil division (b > 0).
inline int64_t ceil_div(int64_t a, int64_t b) {
    return -floor_div(-a, b);
}

/// Attribute `name` with `count` values, or `count` times `fallback` when absent; fails for another
/// count or a value that is not positive (`positive`) or negative.
inline std::vector<int64_t> ints_or(const NodeInfo& node, std::string_view name, std::size_t count, int64_t fallback,
                                    bool positive) {
    std::vector<int64_t> values = node.attr_ints(name);
    if (values.empty()) return std::vector<int64_t>(count, fallback);
    if (values.size() != count)
        node.fail(fmt::format("attribute '{}' must have {} values, but it has {}", name, count, values.size()));
    for (int64_t value : values)
        if (positive ? value <= 0 : value < 0)
            node.fail(fmt::format("attribute '{}' values must be {}, but one is {}", name,
                                  positive ? "positive" : "non-negative", value));
    return values;
}

}  // namespace polygraphy::ref::window
