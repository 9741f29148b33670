// Helpers of the built-in runtime's tests: tensor literals, comparisons, and the two ways to run an
// operator:
// - OpTester runs a one-node model through a real Session, so attribute parsing, opset handling
//   and error prefixes are exercised exactly as in `polygraphy run --ref` (use it by default);
// - KernelHarness creates one kernel through OpRegistry::builtin() and computes it directly, for
//   what a session hides: which inputs the factory sees as constant, kernel creation on its own,
//   and repeated compute() calls on one kernel (primitive caches).
// Op tests live beside their family: tests/backend/ref/ops/<family>_test.cpp.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model_builder.h"
#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy::testing {

// ---- tensor literals --------------------------------------------------------------------------------

inline Tensor make(DataType dtype, Shape shape, std::vector<double> values) {
    return Tensor::from_doubles(dtype, std::move(shape), values);
}
inline Tensor f32(Shape shape, std::vector<double> values) {
    return make(DataType::kFloat32, std::move(shape), std::move(values));
}
inline Tensor f64(Shape shape, std::vector<double> values) {
    return make(DataType::kFloat64, std::move(shape), std::move(values));
}
inline Tensor i64(Shape shape, std::vector<double> values) {
    return make(DataType::kInt64, std::move(shape), std::move(values));
}
inline Tensor i32(Shape shape, std::vector<double> values) {
    return make(DataType::kInt32, std::move(shape), std::move(values));
}
inline Tensor boolean(Shape shape, std::vector<double> values) {
    return make(DataType::kBool, std::move(shape), std::move(values));
}
inline Tensor strings(Shape shape, std::vector<std::string> values) {
    Tensor tensor(DataType::kString, std::move(shape));
    tensor.strings() = std::move(values);
    return tensor;
}
/// 0, 1, 2, ... as `dtype` (numpy's arange(n).reshape(shape)).
inline Tensor iota(DataType dtype, Shape shape) {
    std::vector<double> values(static_cast<std::size_t>(shape_volume(shape)));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
    return make(dtype, std::move(shape), std::move(values));
}

/// uint8 or int8 codes over the type's whole range, deterministic in `seed` (quantized operators' inputs).
inline Tensor random_codes(DataType dtype, const Shape& shape, uint32_t seed) {
    const Tensor uniform = random_tensor(shape, seed, dtype == DataType::kUInt8 ? 0.0f : -128.0f,
                                         dtype == DataType::kUInt8 ? 255.99f : 127.99f);
    std::vector<double> values;
    for (int64_t i = 0; i < uniform.numel(); ++i) values.push_back(std::floor(uniform.value_as_double(i)));
    return Tensor::from_doubles(dtype, shape, values);
}

inline std::vector<double> values_of(const Tensor& tensor) {
    std::vector<double> values;
    for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.value_as_double(i));
    return values;
}

/// Same dtype and shape, values within `tolerance` (absolute + relative), NaN matching NaN.
inline ::testing::AssertionResult tensors_near(const Tensor& actual, const Tensor& expected, double tolerance = 1e-6) {
    if (actual.dtype() != expected.dtype())
        return ::testing::AssertionFailure()
               << "dtype " << dtype_name(actual.dtype()) << " != expected " << dtype_name(expected.dtype());
    if (actual.shape() != expected.shape())
        return ::testing::AssertionFailure()
               << "shape " << shape_to_string(actual.shape()) << " != expected " << shape_to_string(expected.shape());
    if (actual.dtype() == DataType::kString) {
        if (actual.strings() != expected.strings()) return ::testing::AssertionFailure() << "strings differ";
        return ::testing::AssertionSuccess();
    }
    for (int64_t i = 0; i < actual.numel(); ++i) {
        const double a = actual.value_as_double(i), e = expected.value_as_double(i);
        if (std::isnan(a) && std::isnan(e)) continue;
        if (a == e) continue;
        if (!(std::abs(a - e) <= tolerance * (1.0 + std::abs(e))))
            return ::testing::AssertionFailure() << "element " << i << ": " << a << " != expected " << e;
    }
    return ::testing::AssertionSuccess();
}

/// A STRINGS attribute (model_builder's set_attr has no overload for it).
inline void set_strings(onnx::NodeProto& node, const std::string& name, const std::vector<std::string>& values) {
    auto* attribute = node.add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::STRINGS);
    for (const auto& value : values) attribute->add_strings(value);
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
        if (std::isnan(e))
            ok = std::isnan(a);
        else if (std::isinf(e))
            ok = a == e;
        else
            ok = std::abs(a - e) <= atol + rtol * std::abs(e);
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

// ---- running an operator ------------------------------------------------------------------------------

/// Runs one operator as a one-node model. Inputs are fed (input) or initializers (constant);
/// omit() leaves an empty input name. The node is named "node" unless name() says otherwise.
class OpTester {
public:
    explicit OpTester(std::string op_type, int64_t opset = 17, std::string domain = "")
        : op_type_(std::move(op_type)), opset_(opset), domain_(std::move(domain)) {}

    OpTester& input(Tensor value) { return add_input(std::move(value), false); }
    OpTester& constant(Tensor value) { return add_input(std::move(value), true); }
    OpTester& omit() {
        inputs_.push_back({"", Tensor(), false});
        return *this;
    }
    template <typename V>
    OpTester& attr(const std::string& name, V value) {
        set_attr(attributes_, name, value);
        return *this;
    }
    OpTester& attr(const std::string& name, int value) { return attr(name, static_cast<int64_t>(value)); }
    OpTester& attr(const std::string& name, double value) { return attr(name, static_cast<float>(value)); }
    OpTester& attr(const std::string& name, const char* value) { return attr(name, std::string(value)); }
    OpTester& ints(const std::string& name, std::vector<int64_t> values) { return attr(name, std::move(values)); }
    OpTester& floats(const std::string& name, std::vector<float> values) { return attr(name, std::move(values)); }
    /// Any attribute, built by hand (e.g. a strings list).
    OpTester& raw_attr(onnx::AttributeProto attribute) {
        *attributes_.add_attribute() = std::move(attribute);
        return *this;
    }
    OpTester& outputs(int count) {
        num_outputs_ = count;
        return *this;
    }
    OpTester& name(std::string node_name) {
        node_name_ = std::move(node_name);
        return *this;
    }

    /// All outputs, in order.
    std::vector<Tensor> run_all() const {
        ModelBuilder builder(opset_);
        if (!domain_.empty()) builder.opset_import(domain_, 1);
        TensorMap feed;
        std::vector<std::string> input_names;
        for (const auto& in : inputs_) {
            input_names.push_back(in.name);
            if (in.name.empty()) continue;
            if (in.constant) {
                builder.initializer(in.name, in.value);
            } else {
                builder.input(in.name, in.value.dtype(), in.value.shape());
                feed.set(in.name, in.value);
            }
        }
        std::vector<std::string> output_names;
        for (int i = 0; i < num_outputs_; ++i) output_names.push_back("out" + std::to_string(i));
        onnx::NodeProto& node = builder.node(op_type_, input_names, output_names, node_name_, domain_);
        for (const auto& attribute : attributes_.attribute()) *node.add_attribute() = attribute;
        for (const auto& output : output_names) builder.output(output, DataType::kFloat32, {}, false);
        ref::Session session(*builder.build(), ref::SessionOptions{2});
        TensorMap result = session.run(feed);
        std::vector<Tensor> tensors;
        for (const auto& output : output_names) tensors.push_back(result.at(output));
        return tensors;
    }

    /// The first output.
    Tensor run() const { return run_all().at(0); }

private:
    struct Input {
        std::string name;
        Tensor value;
        bool constant;
    };
    OpTester& add_input(Tensor value, bool constant) {
        inputs_.push_back({"in" + std::to_string(inputs_.size()), std::move(value), constant});
        return *this;
    }

    std::string op_type_;
    int64_t opset_;
    std::string domain_;
    std::string node_name_ = "node";
    std::vector<Input> inputs_;
    onnx::NodeProto attributes_;
    int num_outputs_ = 1;
};

/// Runs a one-input operator and returns its output (OpTester at `opset`).
inline Tensor unary(const std::string& op, const Tensor& x, int64_t opset = 17) {
    return OpTester(op, opset).input(x).run();
}

/// Asserts that `statement` throws `Exception` whose message contains `text`.
#define EXPECT_THROW_MESSAGE(statement, Exception, text)                        \
    do {                                                                        \
        try {                                                                   \
            statement;                                                          \
            ADD_FAILURE() << "expected " #Exception " containing: " << (text);  \
        } catch (const Exception& error) {                                      \
            EXPECT_THAT(std::string(error.what()), ::testing::HasSubstr(text)); \
        }                                                                       \
    } while (0)

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

    /// Offers `buffer` for output `index` in every run (KernelContext::offered_output).
    KernelHarness& offer_output(std::size_t index, const Tensor& buffer) {
        offered_.emplace_back(index, buffer);
        return *this;
    }

    /// Creates the kernel (attribute validation happens here).
    std::unique_ptr<ref::Kernel> create() const {
        const ref::OpEntry* entry = ref::OpRegistry::builtin().find(node_.domain(), node_.op_type(), opset_);
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
            for (const auto& [index, buffer] : offered_) context.offer_output(index, buffer);
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
    std::vector<std::pair<std::size_t, Tensor>> offered_;
    mutable std::unique_ptr<ref::NodeInfo> info_;
};

}  // namespace polygraphy::testing
