// Loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (reductions none/sum/mean,
// optional class weights, ignore_index, and SoftmaxCrossEntropyLoss's optional log_prob output).
// Losses are small and rarely hot, so everything is computed in double and cast back at the end.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

std::vector<double> doubles_of(const Tensor& tensor) {
    const Tensor wide = tensor.cast(DataType::kFloat64);
    const double* data = wide.data_as<double>();
    return std::vector<double>(data, data + wide.numel());
}

enum class Reduction { kNone, kSum, kMean };

Reduction parse_reduction(const NodeInfo& node) {
    const std::string reduction = node.attr_string("reduction", "mean");
    if (reduction == "none") return Reduction::kNone;
    if (reduction == "sum") return Reduction::kSum;
    if (reduction == "mean") return Reduction::kMean;
    node.fail("attribute 'reduction' must be 'none', 'sum' or 'mean', but it is '" + reduction + "'");
}

/// The negative log-likelihood of log-probabilities `log_prob` (shape N, C, d1..dk) at `target`
/// (N, d1..dk), weighted and reduced as ONNX specifies; the result has log_prob's dtype.
Tensor nll_loss(const NodeInfo& node, const std::vector<double>& log_prob, const Shape& input_shape, DataType dtype,
                const Tensor& target, const Tensor* weight, Reduction reduction, std::optional<int64_t> ignore_index) {
    if (input_shape.size() < 2)
        node.fail("input must have rank >= 2 (N, C, ...), but it has shape " + shape_to_string(input_shape));
    Shape expected_target{input_shape[0]};
    expected_target.insert(expected_target.end(), input_shape.begin() + 2, input_shape.end());
    if (target.shape() != expected_target)
        node.fail("target must have shape " + shape_to_string(expected_target) + ", but it has shape " +
                  shape_to_string(target.shape()));
    const int64_t classes = input_shape[1];
    std::vector<double> weights;
    if (weight != nullptr) {
        if (weight->shape() != Shape{classes})
            node.fail("weight must have shape " + shape_to_string(Shape{classes}) + ", but it has shape " +
                      shape_to_string(weight->shape()));
        weights = doubles_of(*weight);
    }
    const std::vector<int64_t> labels = read_ints(node, target, "target");
    const int64_t batch = input_shape[0];
    const int64_t inner = batch == 0 ? 0 : static_cast<int64_t>(labels.size()) / batch;

    std::vector<double> loss(labels.size(), 0.0);
    double loss_sum = 0.0, weight_sum = 0.0;
    for (int64_t n = 0; n < batch; ++n) {
        for (int64_t d = 0; d < inner; ++d) {
            const std::size_t i = static_cast<std::size_t>(n * inner + d);
            const int64_t label = labels[i];
            if (ignore_index && label == *ignore_index) continue;  // loss 0, weight 0
            if (label < 0 || label >= classes)
                node.fail("target value " + std::to_string(label) + " is out of range for " +
                          std::to_string(classes) + " classes");
            const double w = weights.empty() ? 1.0 : weights[static_cast<std::size_t>(label)];
            loss[i] = -log_prob[static_cast<std::size_t>((n * classes + label) * inner + d)] * w;
            loss_sum += loss[i];
            weight_sum += w;
        }
    }
    switch (reduction) {
        case Reduction::kNone:
            return Tensor::from_doubles(dtype, target.shape(), loss);
        case Reduction::kSum:
            return Tensor::from_doubles(dtype, {}, {loss_sum});
        case Reduction::kMean:
            break;
    }
    return Tensor::from_doubles(dtype, {}, {loss_sum / weight_sum});
}

std::optional<int64_t> parse_ignore_index(const NodeInfo& node) {
    if (!node.has_attr("ignore_index")) return std::nullopt;
    return node.attr_int("ignore_index", 0);
}

void require_float(const NodeInfo& node, const Tensor& tensor, const char* what) {
    if (!is_float_type(tensor.dtype())) unsupported_dtype(node, tensor.dtype(), what);
}

class NllLossKernel final : public Kernel {
public:
    explicit NllLossKernel(const NodeInfo& node)
        : reduction_(parse_reduction(node)), ignore_index_(parse_ignore_index(node)) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& input = context.required_input(0);
        require_float(node, input, "input");
        const Tensor* weight = context.input(2);
        context.set_output(0, nll_loss(node, doubles_of(input), input.shape(), input.dtype(),
                                       context.required_input(1), weight, reduction_, ignore_index_));
    }

private:
    Reduction reduction_;
    std::optional<int64_t> ignore_index_;
};

class SoftmaxCrossEntropyKernel final : public Kernel {
public:
    explicit SoftmaxCrossEntropyKernel(const NodeInfo& node)
        : reduction_(parse_reduction(node)), ignore_index_(parse_ignore_index(node)) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& scores = context.required_input(0);
        require_float(node, scores, "scores");
        const Shape& shape = scores.shape();
        if (shape.size() < 2)
            node.fail("scores must have rank >= 2 (N, C, ...), but it has shape " + shape_to_string(shape));
        // log_softmax over axis 1 (classes), computed stably around the maximum.
        std::vector<double> log_prob = doubles_of(scores);
        const int64_t classes = shape[1];
        int64_t inner = 1;
        for (std::size_t i = 2; i < shape.size(); ++i) inner *= shape[i];
        for (int64_t n = 0; n < shape[0]; ++n) {
            for (int64_t d = 0; d < inner; ++d) {
                double* base = log_prob.data() + n * classes * inner + d;
                double max_value = -INFINITY;
                for (int64_t c = 0; c < classes; ++c) max_value = std::max(max_value, base[c * inner]);
                double sum = 0.0;
                for (int64_t c = 0; c < classes; ++c) sum += std::exp(base[c * inner] - max_value);
                const double log_sum = std::log(sum) + max_value;
                for (int64_t c = 0; c < classes; ++c) base[c * inner] -= log_sum;
            }
        }
        context.set_output(0, nll_loss(node, log_prob, shape, scores.dtype(), context.required_input(1),
                                       context.input(2), reduction_, ignore_index_));
        if (context.num_outputs() > 1) context.set_output(1, Tensor::from_doubles(scores.dtype(), shape, log_prob));
    }

private:
    Reduction reduction_;
    std::optional<int64_t> ignore_index_;
};

}  // namespace

void register_loss_ops(OpRegistry& registry) {
    registry.add("", "NegativeLogLikelihoodLoss", 12, kMaxOpset, make_factory<NllLossKernel>());
    registry.add("", "SoftmaxCrossEntropyLoss", 12, kMaxOpset, make_factory<SoftmaxCrossEntropyKernel>());
}

}  // namespace polygraphy::ref
