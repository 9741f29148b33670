// Recurrent layers: RNN, GRU, LSTM (forward, reverse and bidirectional; layout 0 and 1 from opset
// 14; sequence_lens; clip; GRU linear_before_reset; LSTM peepholes and input_forget; every
// activation the spec lists, with activation_alpha/beta). Computed in double, rounded to the
// input's type at the end: these layers are small next to the convolutions, and the sequential
// dependency leaves little to vectorize.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/ref/compute/kernel_util.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {

enum class Cell { kRnn, kGru, kLstm };

struct Activation {
    enum class Kind {
        kRelu,
        kTanh,
        kSigmoid,
        kAffine,
        kLeakyRelu,
        kThresholdedRelu,
        kScaledTanh,
        kHardSigmoid,
        kElu,
        kSoftsign,
        kSoftplus
    } kind = Kind::kTanh;
    double alpha = 0, beta = 0;

    double operator()(double x) const {
        switch (kind) {
            case Kind::kRelu:
                return x > 0 ? x : 0;
            case Kind::kTanh:
                return std::tanh(x);
            case Kind::kSigmoid:
                return 1.0 / (1.0 + std::exp(-x));
            case Kind::kAffine:
                return alpha * x + beta;
            case Kind::kLeakyRelu:
                return x >= 0 ? x : alpha * x;
            case Kind::kThresholdedRelu:
                return x > alpha ? x : 0;
            case Kind::kScaledTanh:
                return alpha * std::tanh(beta * x);
            case Kind::kHardSigmoid:
                return std::max(0.0, std::min(1.0, alpha * x + beta));
            case Kind::kElu:
                return x >= 0 ? x : alpha * (std::exp(x) - 1);
            case Kind::kSoftsign:
                return x / (1 + std::fabs(x));
            case Kind::kSoftplus:
                return std::log1p(std::exp(x));
        }
        return x;
    }
};

// Parses one activation name; consumes alpha/beta values from the lists where the function has them.
Activation parse_activation(const NodeInfo& node, const std::string& name, const std::vector<float>& alphas,
                            const std::vector<float>& betas, std::size_t& next_alpha, std::size_t& next_beta) {
    using Kind = Activation::Kind;
    struct Spec {
        const char* name;
        Kind kind;
        int params;  // 0: none, 1: alpha, 2: alpha and beta
        double alpha, beta;
    };
    static const Spec specs[] = {
        {"Relu", Kind::kRelu, 0, 0, 0},
        {"Tanh", Kind::kTanh, 0, 0, 0},
        {"Sigmoid", Kind::kSigmoid, 0, 0, 0},
        {"Affine", Kind::kAffine, 2, 1.0, 0.0},
        {"LeakyRelu", Kind::kLeakyRelu, 1, 0.01, 0},
        {"ThresholdedRelu", Kind::kThresholdedRelu, 1, 1.0, 0},
        {"ScaledTanh", Kind::kScaledTanh, 2, 1.0, 1.0},
        {"HardSigmoid", Kind::kHardSigmoid, 2, 0.2, 0.5},
        {"Elu", Kind::kElu, 1, 1.0, 0},
        {"Softsign", Kind::kSoftsign, 0, 0, 0},
        {"Softplus", Kind::kSoftplus, 0, 0, 0},
    };
    for (const Spec& spec : specs) {
        std::string lower_name = name, lower_spec = spec.name;
        for (char& c : lower_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        for (char& c : lower_spec) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (lower_name != lower_spec) continue;
        Activation activation{spec.kind, spec.alpha, spec.beta};
        if (spec.params >= 1 && next_alpha < alphas.size()) activation.alpha = alphas[next_alpha++];
        if (spec.params >= 2 && next_beta < betas.size()) activation.beta = betas[next_beta++];
        return activation;
    }
    node.fail(fmt::format("attribute 'activations' names an unsupported activation '{}'", name));
}

template <Cell kCell>
class RecurrentKernel final : public Kernel {
public:
    static constexpr int kGates = kCell == Cell::kRnn ? 1 : kCell == Cell::kGru ? 3 : 4;
    static constexpr int kFunctions = kCell == Cell::kRnn ? 1 : kCell == Cell::kGru ? 2 : 3;

    explicit RecurrentKernel(const NodeInfo& node) {
        hidden_ = node.attr_int("hidden_size", 0);
        if (!node.has_attr("hidden_size") || hidden_ <= 0)
            node.fail(fmt::format("attribute 'hidden_size' must be a positive integer, but it is {}",
                                  node.has_attr("hidden_size") ? std::to_string(hidden_) : "missing"));
        const std::string direction = node.attr_string("direction", "forward");
        if (direction == "forward")
            directions_ = 1;
        else if (direction == "reverse")
            directions_ = 1, reverse_only_ = true;
        else if (direction == "bidirectional")
            directions_ = 2;
        else
            node.fail(fmt::format("attribute 'direction' must be forward, reverse or bidirectional, but it is '{}'",
                                  direction));
        layout_ = node.opset() >= 14 ? node.attr_int("layout", 0) : 0;
        if (layout_ != 0 && layout_ != 1)
            node.fail(fmt::format("attribute 'layout' must be 0 or 1, but it is {}", layout_));
        if (node.has_attr("clip")) {
            clip_ = node.attr_float("clip", 0.0f);
            if (clip_ <= 0) node.fail(fmt::format("attribute 'clip' must be positive, but it is {}", clip_));
        }
        if constexpr (kCell == Cell::kGru) linear_before_reset_ = node.attr_int("linear_before_reset", 0) != 0;
        if constexpr (kCell == Cell::kLstm) input_forget_ = node.attr_int("input_forget", 0) != 0;

        std::vector<std::string> names;
        if (const onnx::AttributeProto* attribute = node.attr("activations"))
            names.assign(attribute->strings().begin(), attribute->strings().end());
        if (names.empty()) {
            const std::vector<std::string> defaults = kCell == Cell::kRnn ? std::vector<std::string>{"Tanh"}
                                                      : kCell == Cell::kGru
                                                          ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
            for (int d = 0; d < directions_; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
        }
        if (static_cast<int>(names.size()) != kFunctions * directions_)
            node.fail(fmt::format("attribute 'activations' must name {} functions ({} per direction), but it names {}",
                                  kFunctions * directions_, kFunctions, names.size()));
        const std::vector<float> alphas = node.attr_floats("activation_alpha");
        const std::vector<float> betas = node.attr_floats("activation_beta");
        std::size_t next_alpha = 0, next_beta = 0;
        for (const std::string& name : names)
            activations_.push_back(parse_activation(node, name, alphas, betas, next_alpha, next_beta));
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& x0 = context.required_input(0);
        if (!dtype_is_floating(x0.dtype())) unsupported_dtype(node, x0.dtype());
        if (x0.rank() != 3)
            node.fail(fmt::format("input X must have rank 3, but it has shape {}", shape_to_string(x0.shape())));
        const Tensor x = x0.cast(DataType::kFloat64);
        const int64_t seq = x.shape()[layout_ == 0 ? 0 : 1], batch = x.shape()[layout_ == 0 ? 1 : 0];
        const int64_t in_size = x.shape()[2];
        const int64_t rows = kGates * hidden_;
        const Tensor w = checked(node, context.required_input(1), {directions_, rows, in_size}, "W");
        const Tensor r = checked(node, context.required_input(2), {directions_, rows, hidden_}, "R");
        const Tensor* b0 = optional_input(context, 3);
        const Tensor b = b0 ? checked(node, *b0, {directions_, 2 * rows}, "B") : Tensor();
        const Tensor* lens0 = optional_input(context, 4);
        std::vector<int64_t> lengths(static_cast<std::size_t>(batch), seq);
        if (lens0) {
            if (lens0->shape() != Shape{batch})
                node.fail(fmt::format("input sequence_lens must have shape ({},), but it has shape {}", batch,
                                      shape_to_string(lens0->shape())));
            lengths = read_ints(node, *lens0, "sequence_lens");
            for (int64_t length : lengths)
                if (length < 0 || length > seq)
                    node.fail(fmt::format("sequence_lens values must be in [0, {}], but one is {}", seq, length));
        }
        const Shape state_shape =
            layout_ == 0 ? Shape{directions_, batch, hidden_} : Shape{batch, directions_, hidden_};
        const Tensor* h0 = optional_input(context, 5);
        const Tensor initial_h = h0 ? checked(node, *h0, state_shape, "initial_h") : Tensor();
        Tensor initial_c, peephole;
        if constexpr (kCell == Cell::kLstm) {
            if (const Tensor* c0 = optional_input(context, 6)) initial_c = checked(node, *c0, state_shape, "initial_c");
            if (const Tensor* p0 = optional_input(context, 7))
                peephole = checked(node, *p0, {directions_, 3 * hidden_}, "P");
        }

        const Shape y_shape =
            layout_ == 0 ? Shape{seq, directions_, batch, hidden_} : Shape{batch, seq, directions_, hidden_};
        Tensor y(DataType::kFloat64, y_shape), y_h(DataType::kFloat64, state_shape),
            y_c(DataType::kFloat64, state_shape);
        const double* X = x.data_as<double>();
        auto x_at = [&](int64_t t, int64_t n, int64_t k) {
            return layout_ == 0 ? X[(t * batch + n) * in_size + k] : X[(n * seq + t) * in_size + k];
        };
        auto state_index = [&](int64_t d, int64_t n, int64_t j) {
            return layout_ == 0 ? (d * batch + n) * hidden_ + j : (n * directions_ + d) * hidden_ + j;
        };
        auto y_index = [&](int64_t t, int64_t d, int64_t n, int64_t j) {
            return layout_ == 0 ? ((t * directions_ + d) * batch + n) * hidden_ + j
                                : ((n * seq + t) * directions_ + d) * hidden_ + j;
        };

        std::vector<double> h(static_cast<std::size_t>(hidden_)), c(static_cast<std::size_t>(hidden_));
        std::vector<double> gates(static_cast<std::size_t>(rows)), recurrent(static_cast<std::size_t>(rows));
        for (int64_t d = 0; d < directions_; ++d) {
            const bool reverse = reverse_only_ || d == 1;
            const double* W = w.data_as<double>() + d * rows * in_size;
            const double* R = r.data_as<double>() + d * rows * hidden_;
            const double* Wb = b.defined() ? b.data_as<double>() + d * 2 * rows : nullptr;
            const double* Rb = Wb ? Wb + rows : nullptr;
            const double* P = peephole.defined() ? peephole.data_as<double>() + d * 3 * hidden_ : nullptr;
            const Activation* f = &activations_[static_cast<std::size_t>(d * kFunctions)];
            for (int64_t n = 0; n < batch; ++n) {
                for (int64_t j = 0; j < hidden_; ++j) {
                    h[j] = initial_h.defined() ? initial_h.data_as<double>()[state_index(d, n, j)] : 0.0;
                    c[j] = initial_c.defined() ? initial_c.data_as<double>()[state_index(d, n, j)] : 0.0;
                }
                const int64_t length = lengths[n];
                for (int64_t step = 0; step < length; ++step) {
                    const int64_t t = reverse ? length - 1 - step : step;
                    for (int64_t g = 0; g < rows; ++g) {
                        double sum = Wb ? Wb[g] : 0.0, rec = Rb ? Rb[g] : 0.0;
                        for (int64_t k = 0; k < in_size; ++k) sum += x_at(t, n, k) * W[g * in_size + k];
                        for (int64_t k = 0; k < hidden_; ++k) rec += h[k] * R[g * hidden_ + k];
                        gates[g] = sum;
                        recurrent[g] = rec;
                    }
                    step_cell(f, gates, recurrent, R, Rb, P, h, c);
                    for (int64_t j = 0; j < hidden_; ++j) y.data_as<double>()[y_index(t, d, n, j)] = h[j];
                }
                for (int64_t j = 0; j < hidden_; ++j) {
                    y_h.data_as<double>()[state_index(d, n, j)] = h[j];
                    y_c.data_as<double>()[state_index(d, n, j)] = c[j];
                }
            }
        }
        const DataType dtype = x0.dtype();
        if (context.num_outputs() > 0) context.set_output(0, y.cast(dtype));
        if (context.num_outputs() > 1) context.set_output(1, y_h.cast(dtype));
        if (kCell == Cell::kLstm && context.num_outputs() > 2) context.set_output(2, y_c.cast(dtype));
    }

private:
    static const Tensor* optional_input(const KernelContext& context, std::size_t index) {
        const Tensor* tensor = context.input(index);
        return tensor && tensor->defined() ? tensor : nullptr;
    }

    static Tensor checked(const NodeInfo& node, const Tensor& tensor, const Shape& expected, std::string_view name) {
        if (tensor.shape() != expected)
            node.fail(fmt::format("input {} must have shape {}, but it has shape {}", name, shape_to_string(expected),
                                  shape_to_string(tensor.shape())));
        if (!dtype_is_floating(tensor.dtype())) unsupported_dtype(node, tensor.dtype());
        return tensor.cast(DataType::kFloat64);
    }

    double clip(double value) const { return clip_ > 0 ? std::max(-clip_, std::min(clip_, value)) : value; }

    // One time step for one batch row: `gates` holds X*W^T + Wb, `recurrent` holds H*R^T + Rb.
    void step_cell(const Activation* f, const std::vector<double>& gates, const std::vector<double>& recurrent,
                   const double* R, const double* Rb, const double* P, std::vector<double>& h,
                   std::vector<double>& c) const {
        const int64_t H = hidden_;
        if constexpr (kCell == Cell::kRnn) {
            for (int64_t j = 0; j < H; ++j) h[j] = f[0](clip(gates[j] + recurrent[j]));
        } else if constexpr (kCell == Cell::kGru) {
            // Gate rows: z, r, h.
            std::vector<double> z(H), reset(H), candidate(H);
            for (int64_t j = 0; j < H; ++j) {
                z[j] = f[0](clip(gates[j] + recurrent[j]));
                reset[j] = f[0](clip(gates[H + j] + recurrent[H + j]));
            }
            if (linear_before_reset_) {
                for (int64_t j = 0; j < H; ++j)
                    candidate[j] = f[1](clip(gates[2 * H + j] + reset[j] * recurrent[2 * H + j]));
            } else {
                for (int64_t j = 0; j < H; ++j) {
                    double sum = Rb ? Rb[2 * H + j] : 0.0;
                    for (int64_t k = 0; k < H; ++k) sum += reset[k] * h[k] * R[(2 * H + j) * H + k];
                    candidate[j] = f[1](clip(gates[2 * H + j] + sum));
                }
            }
            for (int64_t j = 0; j < H; ++j) h[j] = (1 - z[j]) * candidate[j] + z[j] * h[j];
        } else {
            // Gate rows: i, o, f, c; peepholes: i, o, f.
            for (int64_t j = 0; j < H; ++j) {
                const double previous_c = c[j];
                const double i = f[0](clip(gates[j] + recurrent[j] + (P ? P[j] * previous_c : 0.0)));
                const double forget =
                    input_forget_
                        ? 1.0 - i
                        : f[0](clip(gates[2 * H + j] + recurrent[2 * H + j] + (P ? P[2 * H + j] * previous_c : 0.0)));
                const double candidate = f[1](clip(gates[3 * H + j] + recurrent[3 * H + j]));
                c[j] = forget * previous_c + i * candidate;
                const double o = f[0](clip(gates[H + j] + recurrent[H + j] + (P ? P[H + j] * c[j] : 0.0)));
                h[j] = o * f[2](c[j]);
            }
        }
    }

    int64_t hidden_ = 0, directions_ = 1, layout_ = 0;
    bool reverse_only_ = false, linear_before_reset_ = false, input_forget_ = false;
    double clip_ = 0;
    std::vector<Activation> activations_;
};

}  // namespace

void register_recurrent_ops(OpRegistry& registry) {
    registry.add("", "RNN", 1, kMaxOpset, make_factory<RecurrentKernel<Cell::kRnn>>());
    registry.add("", "GRU", 1, kMaxOpset, make_factory<RecurrentKernel<Cell::kGru>>());
    registry.add("", "LSTM", 1, kMaxOpset, make_factory<RecurrentKernel<Cell::kLstm>>());
}

}  // namespace polygraphy::ref
