// ONNX Runtime's fused-operator activations (see contrib_activation.h).
#include "backend/ref/compute/contrib_activation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace polygraphy::ref::contrib {

FusedOutputActivation::FusedOutputActivation(const NodeInfo& node, Params params) {
    const std::string name = node.attr_string("activation", "");
    const std::vector<float> list =
        params == Params::kList ? node.attr_floats("activation_params", {}) : std::vector<float>{};
    // Parameter `index` of the activation: the list's, or the named attribute standing for it. ONNX
    // Runtime requires every parameter of the activation it names.
    std::size_t needed = 0;
    const auto param = [&](std::size_t index, const char* named) {
        needed = std::max(needed, index + 1);
        if (params == Params::kList) {
            if (index >= list.size())
                node.fail(fmt::format("activation '{}' needs {} activation_params, but the node gives {}", name, needed,
                                      list.size()));
            return static_cast<double>(list[index]);
        }
        const std::string attribute = std::string("activation_") + named;
        if (!node.has_attr(attribute))
            node.fail(fmt::format("activation '{}' needs the attribute '{}'", name, attribute));
        return static_cast<double>(node.attr_float(attribute, 0.0f));
    };
    const bool conv_style = params == Params::kList;
    if (name.empty()) {
        kind_ = Kind::kNone;
    } else if (name == "Relu") {
        kind_ = Kind::kRelu;
    } else if (name == "LeakyRelu") {
        kind_ = Kind::kLeakyRelu;
        alpha_ = param(0, "alpha");
    } else if (name == "Tanh") {
        kind_ = Kind::kTanh;
    } else if (name == "Sigmoid") {
        kind_ = Kind::kSigmoid;
    } else if (name == "HardSigmoid") {
        kind_ = Kind::kHardSigmoid;
        alpha_ = param(0, "alpha");
        beta_ = param(1, "beta");
    } else if (conv_style && name == "Clip") {
        kind_ = Kind::kClip;
        alpha_ = param(0, "min");
        beta_ = param(1, "max");
    } else if (!conv_style && name == "Elu") {
        kind_ = Kind::kElu;
        alpha_ = param(0, "alpha");
    } else if (!conv_style && name == "Selu") {
        kind_ = Kind::kSelu;
        alpha_ = param(0, "alpha");
        beta_ = param(1, "gamma");
    } else if (!conv_style && name == "Softplus") {
        kind_ = Kind::kSoftplus;
    } else if (!conv_style && name == "Softsign") {
        kind_ = Kind::kSoftsign;
    } else if (!conv_style && name == "ThresholdedRelu") {
        kind_ = Kind::kThresholdedRelu;
        alpha_ = param(0, "alpha");
    } else {
        node.fail(fmt::format("attribute 'activation' is '{}'; expected {}", name,
                              conv_style ? "Relu, LeakyRelu, Tanh, Sigmoid, Clip or HardSigmoid"
                                         : "Relu, LeakyRelu, Tanh, Sigmoid, HardSigmoid, Elu, Selu, Softplus, "
                                           "Softsign or ThresholdedRelu"));
    }
}

double FusedOutputActivation::apply(double x) const {
    switch (kind_) {
        case Kind::kNone:
            return x;
        case Kind::kRelu:
            return x > 0 ? x : 0.0;
        case Kind::kLeakyRelu:
            return x >= 0 ? x : alpha_ * x;
        case Kind::kTanh:
            return std::tanh(x);
        case Kind::kSigmoid:
            return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
        case Kind::kClip:
            return std::min(std::max(x, alpha_), beta_);
        case Kind::kHardSigmoid:
            return std::max(0.0, std::min(1.0, alpha_ * x + beta_));
        case Kind::kElu:
            return x >= 0 ? x : alpha_ * std::expm1(x);
        case Kind::kSelu:
            return x > 0 ? beta_ * x : beta_ * alpha_ * std::expm1(x);
        case Kind::kSoftplus:
            return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
        case Kind::kSoftsign:
            return x / (1 + std::abs(x));
        case Kind::kThresholdedRelu:
            return x > alpha_ ? x : 0.0;
    }
    return x;
}

void FusedOutputActivation::apply_in_place(Tensor& tensor) const {
    if (kind_ == Kind::kNone) return;
    const int64_t n = tensor.numel();
    if (tensor.dtype() == DataType::kFloat32) {
        float* data = tensor.data_as<float>();
        for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>(apply(data[i]));
    } else if (tensor.dtype() == DataType::kFloat64) {
        double* data = tensor.data_as<double>();
        for (int64_t i = 0; i < n; ++i) data[i] = apply(data[i]);
    } else {
        Tensor wide = tensor.cast(DataType::kFloat64);
        double* data = wide.data_as<double>();
        for (int64_t i = 0; i < n; ++i) data[i] = apply(data[i]);
        tensor = wide.cast(tensor.dtype());
    }
}

}  // namespace polygraphy::ref::contrib
