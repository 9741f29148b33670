// Writes the example models used by the README's Quick start and the examples:
//   example_cnn.onnx   a small image classifier: Conv-BatchNorm-Relu-MaxPool-Conv-Relu-GlobalAveragePool-Gemm-Softmax
//   identity.onnx      y = Identity(x), x float32 [1, 1, 2, 2] (like Polygraphy's own identity model)
// Weights are seeded pseudo-random values, so every run writes the same bytes.
#include <cstdio>
#include <exception>
#include <string>

#include "model_builder.h"

using namespace polygraphy;
using polygraphy::testing::ModelBuilder;
using polygraphy::testing::random_tensor;
using polygraphy::testing::set_attr;

namespace {

void write_example_cnn(const std::string& path) {
    ModelBuilder builder(17, "example_cnn");
    builder.input("image", DataType::kFloat32, Shape{1, 3, 32, 32});
    builder.initializer("conv1.weight", random_tensor({8, 3, 3, 3}, 1, -0.5f, 0.5f));
    builder.initializer("conv1.bias", random_tensor({8}, 2, -0.1f, 0.1f));
    builder.initializer("bn1.scale", random_tensor({8}, 3, 0.5f, 1.5f));
    builder.initializer("bn1.bias", random_tensor({8}, 4, -0.1f, 0.1f));
    builder.initializer("bn1.mean", random_tensor({8}, 5, -0.1f, 0.1f));
    builder.initializer("bn1.var", random_tensor({8}, 6, 0.5f, 1.5f));
    builder.initializer("conv2.weight", random_tensor({16, 8, 3, 3}, 7, -0.3f, 0.3f));
    builder.initializer("conv2.bias", random_tensor({16}, 8, -0.1f, 0.1f));
    builder.initializer("fc.weight", random_tensor({10, 16}, 9, -0.5f, 0.5f));
    builder.initializer("fc.bias", random_tensor({10}, 10, -0.1f, 0.1f));

    auto& conv1 = builder.node("Conv", {"image", "conv1.weight", "conv1.bias"}, {"conv1"}, "conv1");
    set_attr(conv1, "kernel_shape", std::vector<int64_t>{3, 3});
    set_attr(conv1, "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("BatchNormalization", {"conv1", "bn1.scale", "bn1.bias", "bn1.mean", "bn1.var"}, {"bn1"}, "bn1");
    builder.node("Relu", {"bn1"}, {"relu1"}, "relu1");
    auto& pool = builder.node("MaxPool", {"relu1"}, {"pool1"}, "pool1");
    set_attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(pool, "strides", std::vector<int64_t>{2, 2});
    auto& conv2 = builder.node("Conv", {"pool1", "conv2.weight", "conv2.bias"}, {"conv2"}, "conv2");
    set_attr(conv2, "kernel_shape", std::vector<int64_t>{3, 3});
    set_attr(conv2, "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Relu", {"conv2"}, {"relu2"}, "relu2");
    builder.node("GlobalAveragePool", {"relu2"}, {"gap"}, "gap");
    auto& flatten = builder.node("Flatten", {"gap"}, {"features"}, "flatten");
    set_attr(flatten, "axis", int64_t{1});
    auto& fc = builder.node("Gemm", {"features", "fc.weight", "fc.bias"}, {"logits"}, "fc");
    set_attr(fc, "transB", int64_t{1});
    auto& softmax = builder.node("Softmax", {"logits"}, {"probs"}, "softmax");
    set_attr(softmax, "axis", int64_t{-1});
    builder.output("probs", DataType::kFloat32, Shape{1, 10});
    builder.save(path);
}

void write_identity(const std::string& path) {
    ModelBuilder builder(17, "identity");
    builder.input("x", DataType::kFloat32, Shape{1, 1, 2, 2});
    builder.node("Identity", {"x"}, {"y"}, "identity");
    builder.output("y", DataType::kFloat32, Shape{1, 1, 2, 2});
    builder.save(path);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
        return 2;
    }
    try {
        const std::string out_dir = argv[1];
        write_example_cnn(out_dir + "/example_cnn.onnx");
        write_identity(out_dir + "/identity.onnx");
        std::printf("[I] Wrote example_cnn.onnx and identity.onnx to %s\n", out_dir.c_str());
    } catch (const std::exception& error) {
        std::printf("[!] %s\n", error.what());
        return 1;
    }
    return 0;
}
