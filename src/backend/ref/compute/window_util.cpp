#include "backend/ref/compute/window_util.h"

#include <algorithm>

namespace polygraphy::ref::window {

int64_t WindowAttrs::spatial_rank() const {
    if (!kernel_shape.empty()) return static_cast<int64_t>(kernel_shape.size());
    if (!strides.empty()) return static_cast<int64_t>(strides.size());
    if (!dilations.empty()) return static_cast<int64_t>(dilations.size());
    if (!pads.empty()) return static_cast<int64_t>(pads.size() / 2);
    return -1;
}

namespace {

void check_all(const NodeInfo& node, const char* name, const std::vector<int64_t>& values, int64_t minimum) {
    for (int64_t value : values) {
        if (value < minimum) {
            node.fail(std::string("attribute '") + name + "' must have values >= " + std::to_string(minimum) +
                      "\nNote: " + name + " = " + ints_to_string(values));
        }
    }
}

}  // namespace

WindowAttrs parse_window_attrs(const NodeInfo& node, bool kernel_shape_required, bool has_dilations,
                               bool has_ceil_mode) {
    WindowAttrs attrs;
    const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
    if (auto_pad == "NOTSET" || auto_pad.empty()) {
        attrs.auto_pad = AutoPad::kNotSet;
    } else if (auto_pad == "SAME_UPPER") {
        attrs.auto_pad = AutoPad::kSameUpper;
    } else if (auto_pad == "SAME_LOWER") {
        attrs.auto_pad = AutoPad::kSameLower;
    } else if (auto_pad == "VALID") {
        attrs.auto_pad = AutoPad::kValid;
    } else {
        node.fail("attribute 'auto_pad' has an unknown value '" + auto_pad +
                  "'\nNote: allowed values are NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
    attrs.kernel_shape = node.attr_ints("kernel_shape");
    if (kernel_shape_required && attrs.kernel_shape.empty()) node.fail("attribute 'kernel_shape' is required");
    attrs.strides = node.attr_ints("strides");
    if (has_dilations)
        attrs.dilations = node.attr_ints("dilations");
    else if (node.has_attr("dilations"))
        node.fail("attribute 'dilations' is not supported before this opset");
    attrs.pads = node.attr_ints("pads");
    if (has_ceil_mode) {
        const int64_t ceil_mode = node.attr_int("ceil_mode", 0);
        if (ceil_mode != 0 && ceil_mode != 1) {
            node.fail("attribute 'ceil_mode' must be 0 or 1\nNote: ceil_mode = " + std::to_string(ceil_mode));
        }
        attrs.ceil_mode = ceil_mode == 1;
    }

    check_all(node, "kernel_shape", attrs.kernel_shape, 1);
    check_all(node, "strides", attrs.strides, 1);
    check_all(node, "dilations", attrs.dilations, 1);
    check_all(node, "pads", attrs.pads, 0);
    if (attrs.pads.size() % 2 != 0) {
        node.fail("attribute 'pads' must have an even number of values (begin and end per spatial dim)\nNote: pads = " +
                  ints_to_string(attrs.pads));
    }

    const int64_t rank = attrs.spatial_rank();
    auto check_rank = [&](const char* name, const std::vector<int64_t>& values, std::size_t factor) {
        if (!values.empty() && static_cast<int64_t>(values.size()) != rank * static_cast<int64_t>(factor)) {
            node.fail(std::string("attribute '") + name + "' has " + std::to_string(values.size()) +
                      " values but the window has " + std::to_string(rank) + " spatial dims\nNote: " + name + " = " +
                      ints_to_string(values));
        }
    };
    check_rank("strides", attrs.strides, 1);
    check_rank("dilations", attrs.dilations, 1);
    check_rank("pads", attrs.pads, 2);
    return attrs;
}

Geometry resolve_geometry(const NodeInfo& node, const WindowAttrs& attrs, const std::vector<int64_t>& input_spatial,
                          const std::vector<int64_t>& kernel) {
    const std::size_t rank = input_spatial.size();
    if (rank == 0) node.fail("input must have at least one spatial dimension");
    const int64_t attr_rank = attrs.spatial_rank();
    if (attr_rank >= 0 && static_cast<std::size_t>(attr_rank) != rank) {
        node.fail("attributes describe " + std::to_string(attr_rank) + " spatial dims but the input has " +
                  std::to_string(rank));
    }
    if (kernel.size() != rank) {
        node.fail("kernel has " + std::to_string(kernel.size()) + " spatial dims but the input has " +
                  std::to_string(rank) + "\nNote: kernel = " + ints_to_string(kernel));
    }
    Geometry geometry;
    geometry.input = input_spatial;
    geometry.kernel = kernel;
    geometry.strides = attrs.strides.empty() ? std::vector<int64_t>(rank, 1) : attrs.strides;
    geometry.dilations = attrs.dilations.empty() ? std::vector<int64_t>(rank, 1) : attrs.dilations;
    geometry.pad_begin.assign(rank, 0);
    geometry.pad_end.assign(rank, 0);
    geometry.output.assign(rank, 0);
    for (std::size_t d = 0; d < rank; ++d) {
        const int64_t in = input_spatial[d];
        const int64_t stride = geometry.strides[d];
        const int64_t extent = geometry.effective_kernel(d);
        if (attrs.auto_pad == AutoPad::kSameUpper || attrs.auto_pad == AutoPad::kSameLower) {
            const int64_t out = ceil_div(in, stride);
            const int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - in);
            const int64_t smaller = total / 2;
            geometry.pad_begin[d] = attrs.auto_pad == AutoPad::kSameUpper ? smaller : total - smaller;
            geometry.pad_end[d] = total - geometry.pad_begin[d];
            geometry.output[d] = out;
            continue;
        }
        if (attrs.auto_pad == AutoPad::kNotSet && !attrs.pads.empty()) {
            geometry.pad_begin[d] = attrs.pads[d];
            geometry.pad_end[d] = attrs.pads[d + rank];
        }
        const int64_t span = in + geometry.pad_begin[d] + geometry.pad_end[d] - extent;
        if (span < 0) {
            node.fail("input spatial dim " + std::to_string(d) + " (size " + std::to_string(in) + ", padded to " +
                      std::to_string(in + geometry.pad_begin[d] + geometry.pad_end[d]) +
                      ") is smaller than the window (" + std::to_string(extent) + ")");
        }
        int64_t out = (attrs.ceil_mode ? ceil_div(span, stride) : span / stride) + 1;
        // Like PyTorch and the ONNX spec: a last window starting in the end padding is dropped.
        if (attrs.ceil_mode && (out - 1) * stride >= in + geometry.pad_begin[d]) --out;
        geometry.output[d] = out;
    }
    return geometry;
}

}  // namespace polygraphy::ref::window
