// Speed of the compute-heavy ref-runtime kernels, called directly (no Session): a ResNet-like 3x3
// convolution, the ResNet stem, a ViT MLP matmul (197x768 @ 768x3072) and a few memory-bound
// neighbours. Reports GFLOP/s (or GB/s for the memory-bound ones) per thread count.
//
//   build/bench/ops_bench [--benchmark_filter=Conv]
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/ops/families.h"
#include "model_builder.h"
#include "polygraphy/backend/ref/kernel.h"

namespace {

using namespace polygraphy;
using polygraphy::testing::random_tensor;
using polygraphy::testing::set_attr;

const ref::OpRegistry& registry() {
    static const ref::OpRegistry r = [] {
        ref::OpRegistry reg;
        ref::register_conv_ops(reg);
        ref::register_pool_ops(reg);
        ref::register_matmul_ops(reg);
        ref::register_nn_ops(reg);
        ref::register_reduce_ops(reg);
        ref::register_binary_ops(reg);
        return reg;
    }();
    return r;
}

/// One node with its inputs; `constant` marks initializers (pre-packed weights).
struct Node {
    onnx::NodeProto proto;
    std::vector<Tensor> inputs;
    std::vector<bool> constant;
    int64_t opset = 17;

    explicit Node(const std::string& op_type, const std::string& domain = "") {
        proto.set_op_type(op_type);
        proto.set_domain(domain);
        proto.set_name(op_type);
        proto.add_output("y");
    }
    Node& input(Tensor tensor, bool is_constant = false) {
        proto.add_input("x");
        inputs.push_back(std::move(tensor));
        constant.push_back(is_constant);
        return *this;
    }
};

/// Creates the kernel once and computes it every iteration.
void run(benchmark::State& state, Node& node, double work, const char* unit) {
    const int threads = static_cast<int>(state.range(0));
    std::vector<const Tensor*> constants;
    std::vector<const Tensor*> inputs;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        constants.push_back(node.constant[i] ? &node.inputs[i] : nullptr);
        inputs.push_back(&node.inputs[i]);
    }
    const ref::NodeInfo info(node.proto, node.opset, node.proto.name(), constants);
    const auto kernel = registry().find(node.proto.domain(), node.proto.op_type(), node.opset)->factory(info);
    for (auto _ : state) {
        ref::KernelContext context(info, inputs, 1, threads);
        kernel->compute(context);
        benchmark::DoNotOptimize(context.output(0).data());
    }
    state.counters[unit] = benchmark::Counter(work / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void conv(benchmark::State& state, int64_t channels, int64_t size, int64_t in_channels, int64_t kernel, int64_t stride) {
    const int64_t pad = kernel / 2;
    Node node("Conv");
    set_attr(node.proto, "pads", std::vector<int64_t>{pad, pad, pad, pad});
    set_attr(node.proto, "strides", std::vector<int64_t>{stride, stride});
    node.input(random_tensor({1, in_channels, size, size}, 1))
        .input(random_tensor({channels, in_channels, kernel, kernel}, 2), true)
        .input(random_tensor({channels}, 3), true);
    const int64_t out = (size + 2 * pad - kernel) / stride + 1;
    run(state, node, 2.0 * static_cast<double>(channels * out * out * in_channels * kernel * kernel), "GFLOP/s");
}

/// A convolution between channel-blocked tensors ([N, C/B, H, W, B]), as the layout pass runs those
/// between two convolutions (with the bias and a folded Relu): our own kernel or oneDNN's.
void blocked_conv(benchmark::State& state, int64_t channels, int64_t size, int64_t in_channels, int64_t kernel,
                  int64_t stride) {
    const int64_t pad = kernel / 2;
    Node node("FusedConv", ref::kRuntimeDomain);
    set_attr(node.proto, "pads", std::vector<int64_t>{pad, pad, pad, pad});
    set_attr(node.proto, "strides", std::vector<int64_t>{stride, stride});
    const int64_t block = ref::widest_channel_block();  // as a session picks it
    set_attr(node.proto, std::string(ref::kBlockedInputAttr), block);
    set_attr(node.proto, std::string(ref::kBlockedOutputAttr), block);
    set_attr(node.proto, std::string(ref::kActivationAttr), std::string("Relu"));
    node.input(random_tensor({1, in_channels / block, size, size, block}, 1))
        .input(random_tensor({channels, in_channels, kernel, kernel}, 2), true)
        .input(random_tensor({channels}, 3), true);
    const int64_t out = (size + 2 * pad - kernel) / stride + 1;
    run(state, node, 2.0 * static_cast<double>(channels * out * out * in_channels * kernel * kernel), "GFLOP/s");
}

// ResNet's 3x3 convolutions at each stage (resnet18/50 layer1-4), a stride-2 one and a 1x1.
void BM_ConvBlocked3x3_64x56x56(benchmark::State& state) { blocked_conv(state, 64, 56, 64, 3, 1); }
void BM_ConvBlocked3x3_128x28x28(benchmark::State& state) { blocked_conv(state, 128, 28, 128, 3, 1); }
void BM_ConvBlocked3x3_256x14x14(benchmark::State& state) { blocked_conv(state, 256, 14, 256, 3, 1); }
void BM_ConvBlocked3x3_512x7x7(benchmark::State& state) { blocked_conv(state, 512, 7, 512, 3, 1); }
void BM_ConvBlocked3x3s2_128x56x56(benchmark::State& state) { blocked_conv(state, 128, 56, 64, 3, 2); }
void BM_ConvBlocked1x1_256x14x14(benchmark::State& state) { blocked_conv(state, 256, 14, 1024, 1, 1); }

void BM_Conv3x3_64x56x56(benchmark::State& state) { conv(state, 64, 56, 64, 3, 1); }
void BM_Conv3x3_256x14x14(benchmark::State& state) { conv(state, 256, 14, 256, 3, 1); }
void BM_Conv7x7s2_stem(benchmark::State& state) { conv(state, 64, 224, 3, 7, 2); }

// Fixed per-call cost (primitive lookup, streams, reorders) on a problem too small to matter.
void BM_ConvTiny_8x8x4x4(benchmark::State& state) { conv(state, 8, 4, 8, 3, 1); }

void BM_MatMul_197x768x3072(benchmark::State& state) {
    Node node("MatMul");
    node.input(random_tensor({1, 197, 768}, 1)).input(random_tensor({768, 3072}, 2), true);
    run(state, node, 2.0 * 197 * 768 * 3072, "GFLOP/s");
}

// A decoder's LM head (issue 36): few rows, a wide N from a constant weight.
void BM_MatMul_LmHead_64x512x8000(benchmark::State& state) {
    Node node("MatMul");
    node.input(random_tensor({1, 64, 512}, 1)).input(random_tensor({512, 8000}, 2), true);
    run(state, node, 2.0 * 64 * 512 * 8000, "GFLOP/s");
}

void BM_Gemm_Linear_197x768x3072(benchmark::State& state) {
    Node node("Gemm");
    set_attr(node.proto, "transB", int64_t{1});
    node.input(random_tensor({197, 768}, 1)).input(random_tensor({3072, 768}, 2), true).input(random_tensor({3072}, 3), true);
    run(state, node, 2.0 * 197 * 768 * 3072, "GFLOP/s");
}

// A classifier's single row (efficientnet_b0's 1280 -> 1000): the weights' 5 MB stream from memory.
void BM_Gemm_Classifier_1x1280x1000(benchmark::State& state) {
    Node node("Gemm");
    set_attr(node.proto, "transB", int64_t{1});
    node.input(random_tensor({1, 1280}, 1)).input(random_tensor({1000, 1280}, 2), true).input(random_tensor({1000}, 3), true);
    run(state, node, 4.0 * 1280 * 1000, "GB/s");
}

void BM_MaxPool3x3s2_64x112x112(benchmark::State& state) {
    Node node("MaxPool");
    set_attr(node.proto, "kernel_shape", std::vector<int64_t>{3, 3});
    set_attr(node.proto, "strides", std::vector<int64_t>{2, 2});
    set_attr(node.proto, "pads", std::vector<int64_t>{1, 1, 1, 1});
    node.input(random_tensor({1, 64, 112, 112}, 1));
    run(state, node, 4.0 * 64 * 112 * 112 * 1.25, "GB/s");
}

/// squeezenet1_1's pools: 3x3, stride 2, ceil_mode, no pads. The small one stays in the L2 cache,
/// so it times the kernel's compute rather than the memory.
/// `blocked`: the input in the channel-blocked layout the layout pass gives it ([N, C/8, H, W, 8]).
void squeezenet_max_pool(benchmark::State& state, int64_t channels, int64_t size, bool blocked = false) {
    Node node(blocked ? "BlockedMaxPool" : "MaxPool", blocked ? ref::kRuntimeDomain : "");
    set_attr(node.proto, "kernel_shape", std::vector<int64_t>{3, 3});
    set_attr(node.proto, "strides", std::vector<int64_t>{2, 2});
    set_attr(node.proto, "ceil_mode", int64_t{1});
    if (blocked) set_attr(node.proto, std::string(ref::kBlockedInputAttr), ref::kNarrowChannelBlock);
    node.input(blocked ? random_tensor({1, channels / 8, size, size, 8}, 1) : random_tensor({1, channels, size, size}, 1));
    run(state, node, 4.0 * static_cast<double>(channels * size * size) * 1.25, "GB/s");
}
void BM_MaxPool3x3s2ceil_64x111x111(benchmark::State& state) {
    squeezenet_max_pool(state, 64, 111);
}
void BM_MaxPool3x3s2ceil_16x55x55(benchmark::State& state) {
    squeezenet_max_pool(state, 16, 55);
}
void BM_MaxPool3x3s2ceil_Blocked_64x111x111(benchmark::State& state) {
    squeezenet_max_pool(state, 64, 111, true);
}
void BM_MaxPool3x3s2ceil_Blocked_128x55x55(benchmark::State& state) {
    squeezenet_max_pool(state, 128, 55, true);
}

// EfficientNet's squeeze-excite scale on a channel-blocked tensor: [1, 12, 56, 56, 8] * [1, 12, 1, 1, 8].
void BM_Mul_SqueezeExcite_Blocked_96x56x56(benchmark::State& state) {
    Node node("Mul");
    node.input(random_tensor({1, 12, 56, 56, 8}, 1)).input(random_tensor({1, 12, 1, 1, 8}, 2));
    run(state, node, 8.0 * 96 * 56 * 56, "GB/s");
}

void BM_Softmax_12x197x197(benchmark::State& state) {
    Node node("Softmax");
    node.input(random_tensor({1, 12, 197, 197}, 1));
    run(state, node, 8.0 * 12 * 197 * 197, "GB/s");
}

void BM_LayerNorm_197x768(benchmark::State& state) {
    Node node("LayerNormalization");
    node.input(random_tensor({1, 197, 768}, 1)).input(random_tensor({768}, 2), true).input(random_tensor({768}, 3), true);
    run(state, node, 8.0 * 197 * 768, "GB/s");
}

void BM_ReduceMean_64x3136(benchmark::State& state) {
    Node node("ReduceMean");
    node.opset = 13;
    set_attr(node.proto, "axes", std::vector<int64_t>{2, 3});
    node.input(random_tensor({1, 64, 56, 56}, 1));
    run(state, node, 4.0 * 64 * 56 * 56, "GB/s");
}

// onednn::Eltwise (offered to the elementwise family) against a scalar libm loop: Sigmoid over
// EfficientNet-B0's largest activation (32x112x112).
void BM_Sigmoid_Eltwise_401408(benchmark::State& state) {
    const Tensor x = random_tensor({32 * 112 * 112}, 1, -6, 6);
    Tensor y(DataType::kFloat32, x.shape());
    const ref::onednn::Eltwise logistic(dnnl::algorithm::eltwise_logistic);
    for (auto _ : state) {
        logistic.run(x.data_as<float>(), y.data_as<float>(), x.numel(), static_cast<int>(state.range(0)));
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["GB/s"] = benchmark::Counter(8.0 * static_cast<double>(x.numel()) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Sigmoid_ScalarLoop_401408(benchmark::State& state) {
    const Tensor x = random_tensor({32 * 112 * 112}, 1, -6, 6);
    Tensor y(DataType::kFloat32, x.shape());
    for (auto _ : state) {
        const float* in = x.data_as<float>();
        float* out = y.data_as<float>();
        for (int64_t i = 0; i < x.numel(); ++i) out[i] = 1.0f / (1.0f + std::exp(-in[i]));
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["GB/s"] = benchmark::Counter(8.0 * static_cast<double>(x.numel()) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_Sigmoid_Eltwise_401408)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Sigmoid_ScalarLoop_401408)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ConvBlocked3x3_64x56x56)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ConvBlocked3x3_128x28x28)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ConvBlocked3x3_256x14x14)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ConvBlocked3x3_512x7x7)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ConvBlocked3x3s2_128x56x56)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ConvBlocked1x1_256x14x14)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv3x3_64x56x56)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv3x3_256x14x14)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Conv7x7s2_stem)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ConvTiny_8x8x4x4)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MatMul_197x768x3072)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MatMul_LmHead_64x512x8000)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Gemm_Linear_197x768x3072)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Gemm_Classifier_1x1280x1000)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MaxPool3x3s2_64x112x112)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MaxPool3x3s2ceil_64x111x111)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MaxPool3x3s2ceil_16x55x55)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MaxPool3x3s2ceil_Blocked_64x111x111)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_MaxPool3x3s2ceil_Blocked_128x55x55)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Mul_SqueezeExcite_Blocked_96x56x56)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Softmax_12x197x197)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LayerNorm_197x768)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ReduceMean_64x3136)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK_MAIN();
