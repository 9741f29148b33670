// The activation that ONNX Runtime's fused operators apply to their output, named by their
// "activation" attribute. FusedConv takes the activations of its convolution kernels (Relu,
// LeakyRelu, Tanh, Sigmoid, Clip, HardSigmoid) with their parameters in "activation_params";
// FusedGemm takes ONNX Runtime's element-wise activations (Relu, LeakyRelu, Tanh, Sigmoid,
// HardSigmoid, Elu, Selu, Softplus, Softsign, ThresholdedRelu) with "activation_alpha", "_beta" and
// "_gamma" standing for the operator's own attributes.
#pragma once

#include "polygraphy/backend/ref/kernel.h"

namespace polygraphy::ref::contrib {

class FusedOutputActivation {
public:
    /// How a node gives the activation and its parameters.
    enum class Params { kList, kNamed };

    /// No activation.
    FusedOutputActivation() = default;
    /// Reads the node's activation; ModelError naming the node for a name its operator does not take
    /// or parameters that do not fit it.
    FusedOutputActivation(const NodeInfo& node, Params params);

    bool active() const { return kind_ != Kind::kNone; }
    /// Applies it to every element of a float tensor, in place (narrow floats are replaced by a new
    /// tensor), computing in double.
    void apply_in_place(Tensor& tensor) const;

private:
    enum class Kind {
        kNone,
        kRelu,
        kLeakyRelu,
        kTanh,
        kSigmoid,
        kClip,
        kHardSigmoid,
        kElu,
        kSelu,
        kSoftplus,
        kSoftsign,
        kThresholdedRelu
    };
    double apply(double x) const;

    Kind kind_ = Kind::kNone;
    double alpha_ = 0, beta_ = 0;  // the activation's first two parameters (Clip: min, max; Selu: alpha, gamma)
};

}  // namespace polygraphy::ref::contrib
