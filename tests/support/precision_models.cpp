#include "precision_models.h"

#include "model_builder.h"

namespace polygraphy::testing {

onnx::ModelProto fp16_trouble_model() {
    ModelBuilder builder(17, "fp16_trouble");
    builder.input("x", DataType::kFloat32, Shape{4, 16})
        .input("u", DataType::kFloat32, Shape{4, 16})
        .input("v", DataType::kFloat32, Shape{4, 16});
    builder.initializer("w1", random_tensor({16, 16}, 1, -0.5f, 0.5f))
        .initializer("w2", random_tensor({16, 8}, 2, -0.5f, 0.5f))
        .initializer("bias", random_tensor({8}, 3, -0.1f, 0.1f))
        .initializer("big", Tensor::from_doubles(DataType::kFloat32, {}, {2e5}));
    builder.node("MatMul", {"x", "w1"}, {"fc1_out"}, "/fc1/MatMul");
    builder.node("Relu", {"fc1_out"}, {"relu_out"}, "/relu/Relu");
    builder.node("MatMul", {"relu_out", "w2"}, {"fc2_out"}, "/fc2/MatMul");
    builder.node("Tanh", {"fc2_out"}, {"act_out"}, "/act/Tanh");
    builder.node("Add", {"act_out", "bias"}, {"y"}, "/out/Add");
    builder.node("Mul", {"x", "big"}, {"scaled"}, "/scale/Mul");
    builder.node("Sub", {"u", "v"}, {"delta"}, "/delta/Sub");
    builder.output("y", DataType::kFloat32, Shape{4, 8})
        .output("scaled", DataType::kFloat32, Shape{4, 16})
        .output("delta", DataType::kFloat32, Shape{4, 16});
    return builder.proto();
}

InputList fp16_trouble_samples(std::size_t count, uint32_t seed) {
    InputList samples;
    for (std::size_t i = 0; i < count; ++i) {
        const uint32_t base = seed * 1000 + static_cast<uint32_t>(i) * 3;
        TensorMap feed;
        feed.set("x", random_tensor({4, 16}, base, 0.0f, 1.0f));
        const Tensor u = random_tensor({4, 16}, base + 1, 1000.0f, 1000.5f);
        const Tensor w = random_tensor({4, 16}, base + 2, 0.0f, 0.5f);
        Tensor v(DataType::kFloat32, {4, 16});
        for (int64_t k = 0; k < 64; ++k) v.data_as<float>()[k] = u.data_as<float>()[k] - w.data_as<float>()[k];
        feed.set("u", u);
        feed.set("v", v);
        samples.push_back(std::move(feed));
    }
    return samples;
}

}  // namespace polygraphy::testing
