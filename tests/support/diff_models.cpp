#include "diff_models.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "model_builder.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::testing {
namespace {

Tensor weight(const Shape& shape, uint32_t seed, float scale) {
    return random_tensor(shape, seed, -scale, scale);
}

onnx::TensorProto* find_initializer(onnx::ModelProto& model, const std::string& name) {
    for (auto& initializer : *model.mutable_graph()->mutable_initializer())
        if (initializer.name() == name) return &initializer;
    return nullptr;
}

bool is_initializer(const onnx::ModelProto& model, const std::string& name) {
    return std::any_of(model.graph().initializer().begin(), model.graph().initializer().end(),
                       [&](const onnx::TensorProto& initializer) { return initializer.name() == name; });
}

}  // namespace

onnx::ModelProto diff_cnn() {
    ModelBuilder builder(17, "diff_cnn");
    builder.input("x", DataType::kFloat32, Shape{1, 3, 8, 8});
    builder.initializer("w1", weight({8, 3, 3, 3}, 11, 0.4f)).initializer("b1", weight({8}, 12, 0.1f));
    builder.initializer("w2a", weight({8, 8, 3, 3}, 13, 0.2f)).initializer("b2a", weight({8}, 14, 0.1f));
    builder.initializer("w2b", weight({8, 8, 1, 1}, 15, 0.4f)).initializer("b2b", weight({8}, 16, 0.1f));
    builder.initializer("w3", weight({4, 8}, 17, 0.5f)).initializer("b3", weight({4}, 18, 0.1f));
    set_attr(builder.node("Conv", {"x", "w1", "b1"}, {"conv1_out"}, "/conv1/Conv"), "pads",
             std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Relu", {"conv1_out"}, {"relu1_out"}, "/relu1/Relu");
    set_attr(builder.node("Conv", {"relu1_out", "w2a", "b2a"}, {"branch_a_out"}, "/branch_a/Conv"), "pads",
             std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Conv", {"relu1_out", "w2b", "b2b"}, {"branch_b_out"}, "/branch_b/Conv");
    builder.node("Add", {"branch_a_out", "branch_b_out"}, {"add_out"}, "/add/Add");
    builder.node("Relu", {"add_out"}, {"relu2_out"}, "/relu2/Relu");
    builder.node("GlobalAveragePool", {"relu2_out"}, {"pool_out"}, "/pool/GlobalAveragePool");
    builder.node("Flatten", {"pool_out"}, {"flatten_out"}, "/flatten/Flatten");
    set_attr(builder.node("Gemm", {"flatten_out", "w3", "b3"}, {"y"}, "/fc/Gemm"), "transB", int64_t{1});
    builder.output("y", DataType::kFloat32, Shape{1, 4});
    return builder.proto();
}

onnx::ModelProto fp16_version(const onnx::ModelProto& model) {
    onnx::ModelProto converted = model;
    convert_to_fp16(converted);
    return converted;
}

onnx::ModelProto qdq_version(const onnx::ModelProto& model) {
    // The largest magnitude of every tensor, from one run with every tensor marked.
    OnnxModel marked = modify_outputs(std::make_shared<onnx::ModelProto>(model), kMarkAll);
    TensorMap feed;
    for (const auto& input : model.graph().input()) {
        Shape shape;
        for (const auto& dim : input.type().tensor_type().shape().dim()) shape.push_back(dim.dim_value());
        feed.set(input.name(), random_tensor(shape, 1, 0.0f, 1.0f));
    }
    TensorMap values = ref::session_from_onnx(*marked)->run(feed);
    for (const auto& [name, value] : feed) values.set(name, value);
    auto largest = [](const Tensor& tensor) {
        const Tensor data = tensor.cast(DataType::kFloat32);
        float most = 0;
        for (int64_t i = 0; i < data.numel(); ++i) most = std::max(most, std::abs(data.data_as<float>()[i]));
        return most > 0 ? most : 1.0f;
    };

    onnx::ModelProto quantized = model;
    auto& graph = *quantized.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    std::map<std::string, std::string> dequantized;  // tensor -> its DequantizeLinear output
    auto add_scale = [&](const std::string& name, float scale) {
        *graph.add_initializer() =
            tensor_to_proto(Tensor::from_doubles(DataType::kFloat32, {}, {scale}), name + "_scale");
        *graph.add_initializer() =
            tensor_to_proto(Tensor::from_doubles(DataType::kInt8, {}, {0}), name + "_zero_point");
    };
    for (const onnx::NodeProto& original : model.graph().node()) {
        onnx::NodeProto node = original;
        const bool weighted = node.input_size() > 1 && is_initializer(model, node.input(1));
        if (weighted && (node.op_type() == "Conv" || node.op_type() == "Gemm" || node.op_type() == "MatMul")) {
            const std::string activation = node.input(0);
            if (!dequantized.contains(activation)) {
                add_scale(activation, 1.5f * largest(values.at(activation)) / 127.0f);
                *nodes.Add() =
                    make_node("QuantizeLinear", {activation, activation + "_scale", activation + "_zero_point"},
                              {activation + "_QuantizeLinear_Output"}, activation + "_QuantizeLinear");
                *nodes.Add() = make_node(
                    "DequantizeLinear",
                    {activation + "_QuantizeLinear_Output", activation + "_scale", activation + "_zero_point"},
                    {activation + "_DequantizeLinear_Output"}, activation + "_DequantizeLinear");
                dequantized[activation] = activation + "_DequantizeLinear_Output";
            }
            node.set_input(0, dequantized[activation]);
            const std::string name = node.input(1);
            onnx::TensorProto* initializer = find_initializer(quantized, name);
            const Tensor value = tensor_from_proto(*initializer);
            const float scale = largest(value) / 127.0f;
            std::vector<double> levels(static_cast<std::size_t>(value.numel()));
            for (std::size_t i = 0; i < levels.size(); ++i)
                levels[i] = std::clamp(std::round(value.data_as<float>()[i] / scale), -127.0f, 127.0f);
            *initializer =
                tensor_to_proto(Tensor::from_doubles(DataType::kInt8, value.shape(), levels), name + "_quantized");
            add_scale(name, scale);
            *nodes.Add() = make_node("DequantizeLinear", {name + "_quantized", name + "_scale", name + "_zero_point"},
                                     {name + "_DequantizeLinear_Output"}, name + "_DequantizeLinear");
            node.set_input(1, name + "_DequantizeLinear_Output");
        }
        *nodes.Add() = std::move(node);
    }
    graph.mutable_node()->Swap(&nodes);
    return quantized;
}

onnx::ModelProto fused_version(const onnx::ModelProto& model) {
    onnx::ModelProto fused = model;
    auto& graph = *fused.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (const onnx::NodeProto& node : model.graph().node()) {
        if (node.name() == "/relu1/Relu") continue;
        onnx::NodeProto copy = node;
        if (node.name() == "/conv1/Conv") {
            copy.set_op_type("FusedConv");
            copy.set_domain("com.microsoft");
            copy.set_output(0, "relu1_out");
            set_attr(copy, "activation", std::string("Relu"));
        }
        *nodes.Add() = std::move(copy);
    }
    graph.mutable_node()->Swap(&nodes);
    auto& import = *fused.add_opset_import();
    import.set_domain("com.microsoft");
    import.set_version(1);
    return fused;
}

onnx::ModelProto renamed_reordered_version(const onnx::ModelProto& model, bool rename_inputs) {
    onnx::ModelProto renamed = model;
    auto& graph = *renamed.mutable_graph();
    std::map<std::string, std::string> names;
    auto rename = [&](const std::string& name) {
        if (name.empty()) return name;
        auto found = names.find(name);
        return found == names.end() ? name : found->second;
    };
    int count = 0;
    for (const auto& input : model.graph().input())
        if (rename_inputs && !is_initializer(model, input.name())) names[input.name()] = fmt::format("in{}", count++);
    for (const auto& initializer : model.graph().initializer()) names[initializer.name()] = fmt::format("t{}", count++);
    for (const auto& node : model.graph().node())
        for (const auto& output : node.output()) names[output] = fmt::format("t{}", count++);
    for (auto& input : *graph.mutable_input()) input.set_name(rename(input.name()));
    for (auto& output : *graph.mutable_output()) output.set_name(rename(output.name()));
    for (auto& initializer : *graph.mutable_initializer()) initializer.set_name(rename(initializer.name()));
    graph.clear_value_info();
    int index = 0;
    for (auto& node : *graph.mutable_node()) {
        node.set_name(fmt::format("n{}", index++));
        for (auto& input : *node.mutable_input()) input = rename(input);
        for (auto& output : *node.mutable_output()) output = rename(output);
    }
    // The branches in the other order: any valid topological order must do.
    int branch_a = -1, branch_b = -1;
    for (int n = 0; n < model.graph().node_size(); ++n) {
        if (model.graph().node(n).name() == "/branch_a/Conv") branch_a = n;
        if (model.graph().node(n).name() == "/branch_b/Conv") branch_b = n;
    }
    if (branch_a >= 0 && branch_b >= 0) graph.mutable_node()->SwapElements(branch_a, branch_b);
    return renamed;
}

onnx::ModelProto layer_norm_model() {
    ModelBuilder builder(17, "layer_norm");
    builder.input("x", DataType::kFloat32, Shape{2, 16});
    builder.initializer("w1", weight({16, 16}, 21, 0.5f)).initializer("w2", weight({16, 8}, 22, 0.5f));
    builder.initializer("ln_scale", random_tensor({16}, 23, 0.5f, 1.5f)).initializer("ln_bias", weight({16}, 24, 0.2f));
    builder.node("MatMul", {"x", "w1"}, {"fc1_out"}, "/fc1/MatMul");
    onnx::NodeProto& norm =
        builder.node("LayerNormalization", {"fc1_out", "ln_scale", "ln_bias"}, {"ln_out"}, "/ln/LayerNormalization");
    set_attr(norm, "axis", int64_t{-1});
    set_attr(norm, "epsilon", 1e-5f);
    builder.node("MatMul", {"ln_out", "w2"}, {"y"}, "/fc2/MatMul");
    builder.output("y", DataType::kFloat32, Shape{2, 8});
    return builder.proto();
}

onnx::ModelProto decomposed_layer_norm_model() {
    ModelBuilder builder(17, "layer_norm_decomposed");
    builder.input("x", DataType::kFloat32, Shape{2, 16});
    builder.initializer("w1", weight({16, 16}, 21, 0.5f)).initializer("w2", weight({16, 8}, 22, 0.5f));
    builder.initializer("ln_scale", random_tensor({16}, 23, 0.5f, 1.5f)).initializer("ln_bias", weight({16}, 24, 0.2f));
    builder.initializer("two", Tensor::from_doubles(DataType::kFloat32, {}, {2.0}));
    builder.initializer("epsilon", Tensor::from_doubles(DataType::kFloat32, {}, {1e-5}));
    builder.node("MatMul", {"x", "w1"}, {"fc1_out"}, "/fc1/MatMul");
    set_attr(builder.node("ReduceMean", {"fc1_out"}, {"mean"}, "/ln/ReduceMean"), "axes", std::vector<int64_t>{-1});
    builder.node("Sub", {"fc1_out", "mean"}, {"centered"}, "/ln/Sub");
    builder.node("Pow", {"centered", "two"}, {"squared"}, "/ln/Pow");
    set_attr(builder.node("ReduceMean", {"squared"}, {"variance"}, "/ln/ReduceMean_1"), "axes",
             std::vector<int64_t>{-1});
    builder.node("Add", {"variance", "epsilon"}, {"variance_eps"}, "/ln/Add");
    builder.node("Sqrt", {"variance_eps"}, {"deviation"}, "/ln/Sqrt");
    builder.node("Div", {"centered", "deviation"}, {"normalized"}, "/ln/Div");
    builder.node("Mul", {"normalized", "ln_scale"}, {"scaled"}, "/ln/Mul");
    builder.node("Add", {"scaled", "ln_bias"}, {"ln_out"}, "/ln/Add_1");
    builder.node("MatMul", {"ln_out", "w2"}, {"y"}, "/fc2/MatMul");
    builder.output("y", DataType::kFloat32, Shape{2, 8});
    return builder.proto();
}

void scale_weight(onnx::ModelProto& model, const std::string& name, float factor) {
    onnx::TensorProto* initializer = find_initializer(model, name);
    if (!initializer) initializer = find_initializer(model, name + "_scale");  // a quantized weight or activation
    if (!initializer) throw InternalError("scale_weight: no initializer " + name);
    const DataType dtype = dtype_from_onnx(initializer->data_type());
    const Tensor value = tensor_from_proto(*initializer).cast(DataType::kFloat64);
    std::vector<double> scaled(value.data_as<double>(), value.data_as<double>() + value.numel());
    for (double& element : scaled) element *= factor;
    *initializer = tensor_to_proto(Tensor::from_doubles(dtype, value.shape(), scaled), initializer->name());
}

}  // namespace polygraphy::testing
