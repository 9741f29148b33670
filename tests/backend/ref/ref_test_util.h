// Test helpers for the built-in runtime: tensor literals, comparisons, and OpTester, which runs a
// one-node model through a real Session (so attribute parsing, opset handling and error prefixes
// are exercised exactly as in `polygraphy run --ref`).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "model_builder.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy::ref::testing {

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
        polygraphy::testing::set_attr(attributes_, name, value);
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
        polygraphy::testing::ModelBuilder builder(opset_);
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
        Session session(*builder.build(), SessionOptions{2});
        TensorMap result = session.run(feed);
        std::vector<Tensor> tensors;
        for (const auto& output : output_names) tensors.push_back(result.at(output));
        return tensors;
    }

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

}  // namespace polygraphy::ref::testing
