// Runs one ref-runtime kernel directly (no Session): builds the node, creates the kernel through the
// registry entry of the compute-heavy families, computes, and returns the outputs. Also small value
// helpers shared by the conv/pool/matmul/nn/reduce tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/ref/ops/families.h"
#include "model_builder.h"
#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy::testing {

/// The registry of the families under test (conv, pool, matmul, nn, reduce, and the families added
/// later: strings, recurrent, sampling, detection, quantized, linalg, signal, col2im, ml, elementwise).
inline const ref::OpRegistry& heavy_registry() {
    static const ref::OpRegistry registry = [] {
        ref::OpRegistry r;
        ref::register_conv_ops(r);
        ref::register_pool_ops(r);
        ref::register_matmul_ops(r);
        ref::register_nn_ops(r);
        ref::register_reduce_ops(r);
        ref::register_string_ops(r);
        ref::register_recurrent_ops(r);
        ref::register_sampling_ops(r);
        ref::register_detection_ops(r);
        ref::register_quantized_ops(r);
        ref::register_linalg_ops(r);
        ref::register_signal_ops(r);
        ref::register_col2im_ops(r);
        ref::register_ml_ops(r);
        ref::register_elementwise_ops(r);
        return r;
    }();
    return registry;
}

/// Example:
///     KernelHarness h("Conv", 17);
///     set_attr(h.node(), "pads", std::vector<int64_t>{1, 1, 1, 1});
///     h.input(x).input(w, /*constant=*/true);
///     Tensor y = h.run()[0];
class KernelHarness {
public:
    explicit KernelHarness(const std::string& op_type, int64_t opset = 17, int num_outputs = 1) : opset_(opset) {
        node_.set_op_type(op_type);
        node_.set_name("node");
        for (int i = 0; i < num_outputs; ++i) node_.add_output(numbered('y', i));
    }

    onnx::NodeProto& node() { return node_; }

    /// Adds an input; a constant one is also visible to the factory through NodeInfo::constant_input.
    KernelHarness& input(const Tensor& tensor, bool constant = false) {
        node_.add_input(numbered('x', static_cast<int>(inputs_.size())));
        inputs_.push_back(std::make_unique<Tensor>(tensor));
        constant_.push_back(constant);
        return *this;
    }
    /// An omitted optional input ("" in the node).
    KernelHarness& omitted_input() {
        node_.add_input("");
        inputs_.push_back(nullptr);
        constant_.push_back(false);
        return *this;
    }

    /// Creates the kernel (attribute validation happens here).
    std::unique_ptr<ref::Kernel> create() const {
        const ref::OpEntry* entry = heavy_registry().find(node_.domain(), node_.op_type(), opset_);
        if (entry == nullptr) throw UnsupportedError("no kernel for " + node_.op_type());
        info_ = std::make_unique<ref::NodeInfo>(node_, opset_, node_.name(), constant_pointers());
        return entry->factory(*info_);
    }

    /// Creates the kernel, computes `repeats` times (exercising primitive caches) and returns the
    /// outputs of the last run.
    std::vector<Tensor> run(int num_threads = 2, int repeats = 1) const {
        auto kernel = create();
        std::vector<Tensor> outputs;
        for (int r = 0; r < repeats; ++r) {
            std::vector<const Tensor*> inputs;
            for (const auto& t : inputs_) inputs.push_back(t.get());
            ref::KernelContext context(*info_, inputs, static_cast<std::size_t>(node_.output_size()), num_threads);
            kernel->compute(context);
            outputs = context.outputs();
        }
        return outputs;
    }

private:
    // (Not `"x" + std::to_string(i)`: GCC 12 warns falsely on it, -Wrestrict.)
    static std::string numbered(char prefix, int index) {
        std::string name(1, prefix);
        name += std::to_string(index);
        return name;
    }

    std::vector<const Tensor*> constant_pointers() const {
        std::vector<const Tensor*> result;
        for (std::size_t i = 0; i < inputs_.size(); ++i) result.push_back(constant_[i] ? inputs_[i].get() : nullptr);
        return result;
    }

    onnx::NodeProto node_;
    int64_t opset_;
    std::vector<std::unique_ptr<Tensor>> inputs_;
    std::vector<bool> constant_;
    mutable std::unique_ptr<ref::NodeInfo> info_;
};

inline Tensor f32(const Shape& shape, const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kFloat32, shape, values);
}

inline Tensor i64s(const Shape& shape, const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kInt64, shape, values);
}

/// A string tensor.
inline Tensor text(const Shape& shape, const std::vector<std::string>& values) {
    Tensor tensor(DataType::kString, shape);
    tensor.strings() = values;
    return tensor;
}

/// A STRINGS attribute (model_builder's set_attr has no overload for it).
inline void set_strings(onnx::NodeProto& node, const std::string& name, const std::vector<std::string>& values) {
    auto* attribute = node.add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::STRINGS);
    for (const auto& value : values) attribute->add_strings(value);
}

inline std::vector<double> values_of(const Tensor& tensor) {
    std::vector<double> values;
    for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.value_as_double(i));
    return values;
}

/// 0, 1, 2, ... (numpy arange) scaled and shifted: start + step * i.
inline std::vector<double> arange(int64_t count, double start = 0.0, double step = 1.0) {
    std::vector<double> values;
    for (int64_t i = 0; i < count; ++i) values.push_back(start + step * static_cast<double>(i));
    return values;
}

/// Expects the same shape and |actual - expected| <= atol + rtol * |expected| elementwise (NaNs must
/// match NaNs, infinities must match exactly).
inline void expect_close(const Tensor& actual, const Shape& shape, const std::vector<double>& expected,
                         double rtol = 1e-5, double atol = 1e-6) {
    ASSERT_EQ(actual.shape(), shape);
    ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size()));
    int failures = 0;
    for (int64_t i = 0; i < actual.numel() && failures < 10; ++i) {
        const double a = actual.value_as_double(i);
        const double e = expected[static_cast<std::size_t>(i)];
        bool ok;
        if (std::isnan(e)) ok = std::isnan(a);
        else if (std::isinf(e)) ok = a == e;
        else ok = std::abs(a - e) <= atol + rtol * std::abs(e);
        if (!ok) {
            ++failures;
            ADD_FAILURE() << "element " << i << ": got " << a << ", expected " << e;
        }
    }
}

inline void expect_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-6) {
    expect_close(actual, expected.shape(), values_of(expected), rtol, atol);
}

/// Runs `fn` and expects a PolygraphyException whose message contains `fragment`.
template <typename Fn>
void expect_error(Fn&& fn, const std::string& fragment) {
    try {
        fn();
        ADD_FAILURE() << "expected an error containing: " << fragment;
    } catch (const PolygraphyException& error) {
        EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << "message: " << error.what();
    }
}

/// Row-major multi-index of `flat` within `dims`.
inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
    std::vector<int64_t> index(dims.size());
    for (std::size_t d = dims.size(); d-- > 0;) {
        index[d] = flat % dims[d];
        flat /= dims[d];
    }
    return index;
}

}  // namespace polygraphy::testing
