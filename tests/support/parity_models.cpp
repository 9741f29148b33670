#include "parity_models.h"

namespace polygraphy::testing {
namespace {

Tensor ints(DataType dtype, const Shape& shape, const std::vector<double>& values) {
    return Tensor::from_doubles(dtype, shape, values);
}

// Zeroes values 0 and 1 of every aligned group of four along `axis` (dims of a rank-2 or -4 tensor).
Tensor make_2_4_sparse(Tensor tensor, int64_t axis) {
    int64_t outer = 1, stride = 1;
    const int64_t length = tensor.shape()[axis];
    for (int64_t i = 0; i < axis; ++i) outer *= tensor.shape()[i];
    for (int64_t i = axis + 1; i < tensor.rank(); ++i) stride *= tensor.shape()[i];
    float* data = tensor.data_as<float>();
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t a = 0; a < length; a += 4)
            for (int64_t s = 0; s < stride; ++s)
                for (int64_t k = 0; k < 2; ++k) data[(o * length + a + k) * stride + s] = 0.0f;
    return tensor;
}

void add_value_info(ModelBuilder& builder, const std::string& name, DataType dtype, const DynShape& shape) {
    auto* info = builder.proto().mutable_graph()->add_value_info();
    info->set_name(name);
    auto* type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(dtype_to_onnx(dtype));
    auto* proto_shape = type->mutable_shape();
    for (const Dim& dim : shape) {
        auto* proto_dim = proto_shape->add_dim();
        if (!dim.is_dynamic())
            proto_dim->set_dim_value(dim.value);
        else if (!dim.param.empty())
            proto_dim->set_dim_param(dim.param);
    }
}

}  // namespace

ModelBuilder sparsity_model() {
    ModelBuilder builder(17, "sparsity");
    builder.input("a", DataType::kFloat32, Shape{8, 16});
    builder.input("b", DataType::kFloat32, Shape{2, 6});
    builder.input("c", DataType::kFloat32, Shape{1, 8, 5, 5});
    builder.input("h", DataType::kFloat16, Shape{2, 8});
    builder.initializer("w_matmul", random_tensor({16, 8}, 1));
    builder.initializer("w_gemm", random_tensor({12, 8}, 2));
    builder.initializer("w_transposed", random_tensor({8, 12}, 3));
    builder.initializer("w_cast", random_tensor({8, 4}, 4));
    builder.initializer("w_int8", ints(DataType::kInt8, {8, 8}, std::vector<double>(64, 3)));
    builder.initializer("scale", Tensor::from_doubles(DataType::kFloat32, {}, {0.5}));
    builder.initializer("w_odd", random_tensor({6, 4}, 5));
    builder.initializer("w_conv", make_2_4_sparse(random_tensor({4, 8, 3, 3}, 6), 1));
    builder.initializer("w_half", random_tensor({8, 4}, 7).cast(DataType::kFloat16));
    builder.initializer("w_scaled", random_tensor({4, 4}, 8));
    builder.initializer("two", Tensor::from_doubles(DataType::kFloat32, {}, {2}));
    builder.node("MatMul", {"a", "w_matmul"}, {"mm"}, "matmul");
    set_attr(builder.node("Gemm", {"mm", "w_gemm"}, {"g"}, "gemm"), "transB", int64_t{1});
    set_attr(builder.node("Transpose", {"w_transposed"}, {"wt"}, "transpose"), "perm", std::vector<int64_t>{1, 0});
    builder.node("MatMul", {"g", "wt"}, {"t"}, "matmul_transposed");
    set_attr(builder.node("Cast", {"w_cast"}, {"wc"}, "cast"), "to", int64_t{1});
    builder.node("MatMul", {"t", "wc"}, {"tc"}, "matmul_cast");
    builder.node("DequantizeLinear", {"w_int8", "scale"}, {"wq"}, "dequantize");
    builder.node("MatMul", {"t", "wq"}, {"tq"}, "matmul_quantized");
    builder.node("MatMul", {"b", "w_odd"}, {"bo"}, "matmul_odd");
    builder.node("Conv", {"c", "w_conv"}, {"co"}, "conv");
    builder.node("MatMul", {"h", "w_half"}, {"ho"}, "matmul_half");
    builder.node("Mul", {"w_scaled", "two"}, {"ws"}, "scale_weight");
    builder.node("MatMul", {"tc", "ws"}, {"tcs"}, "matmul_scaled");
    builder.output("tcs", DataType::kFloat32, Shape{8, 4});
    builder.output("tq", DataType::kFloat32, Shape{8, 8});
    builder.output("bo", DataType::kFloat32, Shape{2, 4});
    builder.output("co", DataType::kFloat32, Shape{1, 4, 3, 3});
    builder.output("ho", DataType::kFloat16, Shape{2, 4});
    return builder;
}

ModelBuilder strip_model() {
    ModelBuilder builder(17, "strip");
    builder.opset_import("custom.plugins", 1);
    builder.input("x", DataType::kFloat32, Shape{1, 4, 8, 8});
    builder.input("g", DataType::kFloat32, Shape{2, 16});
    builder.input("idx", DataType::kInt64, Shape{3});
    builder.initializer("conv_w", random_tensor({8, 4, 3, 3}, 11));
    builder.initializer("conv_b", random_tensor({8}, 12));
    builder.initializer("gemm_w", make_2_4_sparse(random_tensor({16, 4}, 13), 0));
    builder.initializer("gemm_b", random_tensor({4}, 14));
    builder.initializer("table", random_tensor({300, 4}, 15));
    builder.initializer("small_table", random_tensor({10, 4}, 16));
    builder.initializer("sliced", random_tensor({1100}, 17));
    builder.initializer("starts", ints(DataType::kInt64, {1}, {2}));
    builder.initializer("ends", ints(DataType::kInt64, {1}, {10}));
    builder.initializer("quantized_w", random_tensor({16, 4}, 18));
    builder.initializer("q_scale", Tensor::from_doubles(DataType::kFloat32, {}, {0.1}));
    builder.initializer("q_zero", ints(DataType::kUInt8, {}, {128}));
    builder.initializer("transposed_w", random_tensor({4, 16}, 19));
    builder.initializer("plugin_w", random_tensor({4}, 20));
    builder.initializer("plugin_u8", ints(DataType::kUInt8, {4}, {1, 2, 3, 4}));
    builder.node("Conv", {"x", "conv_w", "conv_b"}, {"conv_out"}, "conv");
    builder.node("Gemm", {"g", "gemm_w", "gemm_b"}, {"gemm_out"}, "gemm");
    builder.node("Gather", {"table", "idx"}, {"rows"}, "gather");
    builder.node("Gather", {"small_table", "idx"}, {"small_rows"}, "gather_small");
    builder.node("Slice", {"sliced", "starts", "ends"}, {"slice_out"}, "slice");
    builder.node("QuantizeLinear", {"quantized_w", "q_scale", "q_zero"}, {"q"}, "quantize");
    builder.node("DequantizeLinear", {"q", "q_scale", "q_zero"}, {"dq"}, "dequantize");
    builder.node("MatMul", {"g", "dq"}, {"qmm_out"}, "matmul_qdq");
    set_attr(builder.node("Transpose", {"transposed_w"}, {"tw"}, "transpose"), "perm", std::vector<int64_t>{1, 0});
    builder.node("Gemm", {"g", "tw"}, {"tgemm_out"}, "gemm_transposed");
    builder.node("MyPlugin", {"gemm_out", "plugin_w", "plugin_u8"}, {"plugin_out"}, "plugin", "custom.plugins");
    builder.output("conv_out", DataType::kFloat32, Shape{1, 8, 6, 6});
    builder.output("rows", DataType::kFloat32, Shape{3, 4});
    builder.output("small_rows", DataType::kFloat32, Shape{3, 4});
    builder.output("slice_out", DataType::kFloat32, Shape{8});
    builder.output("qmm_out", DataType::kFloat32, Shape{2, 4});
    builder.output("tgemm_out", DataType::kFloat32, Shape{2, 4});
    builder.output("plugin_out", DataType::kFloat32, Shape{2, 4});
    return builder;
}

ModelBuilder dds_model() {
    ModelBuilder builder(17, "dds");
    builder.input("x", DataType::kInt64, Shape{4});
    builder.input("pads", DataType::kInt64, Shape{2});
    builder.initializer("zero", ints(DataType::kInt64, {}, {0}));
    builder.initializer("one", ints(DataType::kInt64, {}, {1}));
    builder.initializer("cap", ints(DataType::kInt64, {}, {16}));
    set_attr(builder.node("ReduceMax", {"x"}, {"limit"}, "reduce_max"), "keepdims", int64_t{0});
    builder.node("Range", {"zero", "limit", "one"}, {"range"}, "range");
    builder.node("Shape", {"x"}, {"shape"}, "shape");
    builder.node("Tile", {"range", "shape"}, {"tiled"}, "tile");
    builder.node("Min", {"limit", "cap"}, {"capped"}, "cap_limit");
    builder.node("Range", {"zero", "capped", "one"}, {"range_capped"}, "range_capped");
    builder.node("Pad", {"range_capped", "pads"}, {"padded"}, "pad");
    builder.node("Identity", {"limit"}, {"limit_again"}, "identity");
    builder.node("Range", {"zero", "limit_again", "one"}, {"range_again"}, "range_again");
    add_value_info(builder, "limit", DataType::kInt64, {});
    add_value_info(builder, "range", DataType::kInt64, {Dim::named("range_len")});
    add_value_info(builder, "shape", DataType::kInt64, {Dim::fixed(1)});
    add_value_info(builder, "capped", DataType::kInt64, {});
    add_value_info(builder, "range_capped", DataType::kInt64, {Dim::named("capped_len")});
    builder.output("tiled", DataType::kInt64, DynShape{Dim::named("tiled_len")});
    builder.output("padded", DataType::kInt64, DynShape{Dim::named("padded_len")});
    builder.output("range_again", DataType::kInt64, DynShape{Dim::named("again_len")});
    return builder;
}

ModelBuilder bf16_weight_model() {
    ModelBuilder builder(17, "bf16_weight");
    builder.input("x", DataType::kBFloat16, Shape{2, 3});
    builder.initializer("w", random_tensor({3, 2}, 21, -3.0f, 3.0f).cast(DataType::kBFloat16));
    builder.node("MatMul", {"x", "w"}, {"y"}, "matmul");
    builder.output("y", DataType::kBFloat16, Shape{2, 2});
    return builder;
}

std::vector<std::pair<std::string, ModelBuilder>> parity_models() {
    return {{"sparsity.onnx", sparsity_model()},
            {"strip.onnx", strip_model()},
            {"dds.onnx", dds_model()},
            {"bf16_weight.onnx", bf16_weight_model()}};
}

}  // namespace polygraphy::testing
