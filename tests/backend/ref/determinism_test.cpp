// `--ref-threads N`: results are bit-identical from run to run and session to session for a fixed
// thread count (issue 3), on the kernels that split work across threads: convolution, matmul,
// reductions, softmax and normalisation.
#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/ref/runner.h"

namespace polygraphy::ref {
namespace {

using polygraphy::testing::ModelBuilder;
using polygraphy::testing::random_tensor;
using polygraphy::testing::set_attr;

// x(1,8,32,32) -> Conv 3x3 (16 ch) -> Relu -> ReduceMean over H,W -> MatMul(16x64) -> Softmax,
// and LayerNormalization over a long axis: outputs y (1,64) and z (1,8,1024).
OnnxModel threaded_model() {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 32, 32});
    builder.initializer("w", random_tensor({16, 8, 3, 3}, 1));
    builder.initializer("b", random_tensor({16}, 2));
    builder.initializer("m", random_tensor({16, 64}, 3));
    builder.initializer("shape", Tensor::from_doubles(DataType::kInt64, {3}, {1, 8, 1024}));
    builder.initializer("scale", random_tensor({1024}, 4));
    builder.initializer("bias", random_tensor({1024}, 5));
    set_attr(builder.node("Conv", {"x", "w", "b"}, {"c"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Relu", {"c"}, {"r"});
    auto& mean = builder.node("ReduceMean", {"r"}, {"p"});
    set_attr(mean, "axes", std::vector<int64_t>{2, 3});
    set_attr(mean, "keepdims", int64_t{0});
    builder.node("MatMul", {"p", "m"}, {"q"});
    builder.node("Softmax", {"q"}, {"y"});
    builder.node("Reshape", {"x", "shape"}, {"flat"});
    builder.node("LayerNormalization", {"flat", "scale", "bias"}, {"z"});
    builder.output("y", DataType::kFloat32, Shape{1, 64});
    builder.output("z", DataType::kFloat32, Shape{1, 8, 1024});
    return builder.build();
}

TensorMap run_once(const onnx::ModelProto& model, int threads, const TensorMap& feed) {
    SessionOptions options;
    options.num_threads = threads;
    return Session(model, options).run(feed);
}

class Determinism : public ::testing::TestWithParam<int> {};

TEST_P(Determinism, FixedThreadCountGivesBitIdenticalResults) {
    const OnnxModel model = threaded_model();
    const TensorMap feed{{"x", random_tensor({1, 8, 32, 32}, 7)}};
    const TensorMap first = run_once(*model, GetParam(), feed);

    SessionOptions options;
    options.num_threads = GetParam();
    const Session session(*model, options);
    for (int repeat = 0; repeat < 5; ++repeat) {
        const TensorMap again = repeat % 2 ? session.run(feed) : run_once(*model, GetParam(), feed);
        for (const char* name : {"y", "z"})
            EXPECT_TRUE(again.at(name).equals(first.at(name))) << name << " #" << repeat;
    }
}

INSTANTIATE_TEST_SUITE_P(Threads, Determinism, ::testing::Values(1, 2, 4));

// Session::run is documented as safe from several threads at once: three callers, each call also
// splitting its kernels across 2 OpenMP threads, must get a serial run's results. Run under the
// `tsan` preset, this is the ThreadSanitizer check of those paths.
void expect_concurrent_runs_match_serial(const ModelBuilder& builder, const Shape& x_shape) {
    const OnnxModel model = builder.build();
    SessionOptions options;
    options.num_threads = 2;
    const Session session(*model, options);
    constexpr int kCallers = 3;
    std::vector<Tensor> feeds, expected;
    for (int t = 0; t < kCallers; ++t) {
        feeds.push_back(random_tensor(x_shape, static_cast<uint32_t>(20 + t)));
        expected.push_back(session.run({{"x", feeds.back()}}).at("y"));
    }
    std::vector<Tensor> results(kCallers);
    std::vector<std::thread> callers;
    for (int t = 0; t < kCallers; ++t)
        callers.emplace_back([&, t] {
            for (int repeat = 0; repeat < 3; ++repeat) results[t] = session.run({{"x", feeds[t]}}).at("y");
        });
    for (auto& caller : callers) caller.join();
    for (int t = 0; t < kCallers; ++t) EXPECT_TRUE(results[t].equals(expected[t])) << "caller " << t;
}

// Tensors above the elementwise/broadcast parallel threshold and a oneDNN convolution (on AVX-512 a
// brgemm kernel with a scratchpad, which concurrent runs shared until each thread passed its own).
TEST(Concurrency, ConcurrentRunsOfOneMultiThreadedSessionMatchASerialRun) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 8, 64, 64});
    builder.initializer("w", random_tensor({16, 8, 3, 3}, 11));
    builder.initializer("bias", random_tensor({16, 1, 1}, 12));
    set_attr(builder.node("Conv", {"x", "w"}, {"c"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Add", {"c", "bias"}, {"a"});  // broadcast over 65,536 elements
    builder.node("Relu", {"a"}, {"r"});
    builder.node("Mul", {"r", "a"}, {"y"});  // same-shape elementwise
    builder.output("y", DataType::kFloat32, Shape{1, 16, 64, 64});
    for (int repeat = 0; repeat < 4; ++repeat) expect_concurrent_runs_match_serial(builder, {1, 8, 64, 64});
}

// Matrix products: two with a constant right-hand side (the runtime's own GEMM) and one of two
// computed operands (oneDNN's matmul, whose plan now takes each thread's scratchpad too).
TEST(Concurrency, ConcurrentRunsOfMatrixProductsMatchASerialRun) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 64, 96});
    builder.initializer("w", random_tensor({96, 200}, 13));
    builder.initializer("v", random_tensor({200, 96}, 14));
    builder.node("MatMul", {"x", "w"}, {"h"});
    builder.node("MatMul", {"h", "v"}, {"g"});
    set_attr(builder.node("Transpose", {"g"}, {"gt"}), "perm", std::vector<int64_t>{0, 2, 1});
    builder.node("MatMul", {"g", "gt"}, {"y"});  // both operands computed
    builder.output("y", DataType::kFloat32, Shape{2, 64, 64});
    for (int repeat = 0; repeat < 4; ++repeat) expect_concurrent_runs_match_serial(builder, {2, 64, 96});
}

// Runs get their large buffers from a block planned from the run before (SessionOptions::plan_buffers):
// the results must be those of buffers from malloc, run after run, also when the batch size changes
// between runs (each change is a new plan), and results kept from earlier runs must stay intact.
TEST(PlannedBuffers, ResultsEqualThoseOfMallocAcrossRunsAndShapes) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32,
                  DynShape{Dim::named("batch"), Dim::fixed(8), Dim::fixed(32), Dim::fixed(32)});
    builder.initializer("w", random_tensor({16, 8, 3, 3}, 31));
    builder.initializer("scale", random_tensor({16, 1, 1}, 32));
    set_attr(builder.node("Conv", {"x", "w"}, {"c"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Sigmoid", {"c"}, {"s"});
    builder.node("Mul", {"c", "s"}, {"silu"});
    builder.node("Mul", {"silu", "scale"}, {"scaled"});
    builder.node("Add", {"scaled", "c"}, {"y"});
    builder.output("y", DataType::kFloat32,
                   DynShape{Dim::named("batch"), Dim::fixed(16), Dim::fixed(32), Dim::fixed(32)});
    const OnnxModel model = builder.build();

    SessionOptions planned_options, malloc_options;
    planned_options.num_threads = malloc_options.num_threads = 2;
    malloc_options.plan_buffers = false;
    const Session planned(*model, planned_options);
    const Session unplanned(*model, malloc_options);
    const std::vector<int64_t> batches{1, 1, 1, 2, 2, 1, 3, 3, 3};
    std::vector<Tensor> kept, expected;
    for (std::size_t run = 0; run < batches.size(); ++run) {
        const TensorMap feed{{"x", random_tensor({batches[run], 8, 32, 32}, static_cast<uint32_t>(40 + run))}};
        kept.push_back(planned.run(feed).at("y"));
        expected.push_back(unplanned.run(feed).at("y"));
        EXPECT_TRUE(kept.back().equals(expected.back())) << "run " << run;
    }
    for (std::size_t run = 0; run < batches.size(); ++run)
        EXPECT_TRUE(kept[run].equals(expected[run])) << "run " << run << " after the later runs";
}

// A squeezenet fire module: two convolutions whose outputs only a channel Concat reads write them
// straight into slices of its output (planned from the run before), and the Concat copies nothing.
// The results must be those of a session that copies, run after run, when the batch or the image size
// changes (the slices no longer fit: the run copies, the next one plans again), and when the
// convolutions' outputs are graph outputs too (nothing is written in place).
OnnxModel fire_module(bool expose_expands) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32,
                  DynShape{Dim::named("batch"), Dim::fixed(16), Dim::named("h"), Dim::named("w")});
    builder.initializer("ws", random_tensor({8, 16, 1, 1}, 61));
    builder.initializer("w1", random_tensor({16, 8, 1, 1}, 62));
    builder.initializer("w3", random_tensor({24, 8, 3, 3}, 63));
    builder.initializer("b3", random_tensor({24}, 64));
    builder.initializer("wy", random_tensor({8, 40, 1, 1}, 65));
    builder.node("Conv", {"x", "ws"}, {"sq"});
    builder.node("Relu", {"sq"}, {"s"});
    // The 3x3 expand runs first, but its output is the Concat's second input.
    set_attr(builder.node("Conv", {"s", "w3", "b3"}, {"e3"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Conv", {"s", "w1"}, {"e1"});
    set_attr(builder.node("Concat", {"e1", "e3"}, {"c"}), "axis", int64_t{1});
    builder.node("Relu", {"c"}, {"r"});
    builder.node("Conv", {"r", "wy"}, {"y"});
    const DynShape y_shape{Dim::named("batch"), Dim::fixed(8), Dim::named("h"), Dim::named("w")};
    builder.output("y", DataType::kFloat32, y_shape);
    if (expose_expands) {
        builder.output("e1", DataType::kFloat32, y_shape);
        builder.output("e3", DataType::kFloat32, y_shape);
    }
    return builder.build();
}

TEST(PlannedBuffers, ConcatInputsWrittenInPlaceEqualCopiedOnes) {
    struct Run {
        int64_t batch, size;
        std::size_t in_place;  // Concats that copied nothing
    };
    const std::vector<Run> runs{{1, 13, 0}, {1, 13, 1}, {1, 13, 1}, {2, 13, 0}, {2, 13, 0}, {1, 13, 0},
                                {1, 13, 1}, {1, 9, 0},  {1, 9, 1},  {1, 13, 0}, {1, 13, 1}};
    for (bool expose_expands : {false, true}) {
        const OnnxModel model = fire_module(expose_expands);
        SessionOptions planned_options, copying_options;
        planned_options.num_threads = copying_options.num_threads = 2;
        copying_options.plan_buffers = false;
        const Session planned(*model, planned_options);
        const Session copying(*model, copying_options);
        std::vector<TensorMap> kept, expected;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const TensorMap feed{
                {"x", random_tensor({runs[i].batch, 16, runs[i].size, runs[i].size}, static_cast<uint32_t>(70 + i))}};
            RunStats stats;
            kept.push_back(planned.run(feed, &stats));
            expected.push_back(copying.run(feed));
            EXPECT_EQ(stats.concats_in_place, expose_expands ? 0 : runs[i].in_place)
                << "run " << i << (expose_expands ? " with the expands as graph outputs" : "");
            for (const auto& [name, tensor] : expected.back())
                EXPECT_TRUE(kept.back().at(name).equals(tensor)) << name << " of run " << i;
        }
        for (std::size_t i = 0; i < runs.size(); ++i)
            for (const auto& [name, tensor] : expected[i])
                EXPECT_TRUE(kept[i].at(name).equals(tensor)) << name << " of run " << i << " after the later runs";
    }
}

// ResNet's downsample path in the channel-blocked layout: a strided pointwise convolution that, on 2
// threads, runs as one single-threaded oneDNN primitive per half of its output channels at once. Each
// needs its own scratchpad (oneDNN gathers the strided input there): with the library's, most runs of
// resnet18 differed from the 1-thread result by up to 0.07.
TEST(Determinism, StridedPointwiseConvolutionSplitAcrossThreadsMatchesOneThread) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 64, 28, 28});
    builder.initializer("w1", random_tensor({128, 64, 3, 3}, 51));
    builder.initializer("w2", random_tensor({256, 128, 1, 1}, 52));
    builder.initializer("w3", random_tensor({256, 256, 3, 3}, 53));
    set_attr(builder.node("Conv", {"x", "w1"}, {"a"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.node("Relu", {"a"}, {"r"});
    set_attr(builder.node("Conv", {"r", "w2"}, {"d"}), "strides", std::vector<int64_t>{2, 2});
    set_attr(builder.node("Conv", {"d", "w3"}, {"y"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
    builder.output("y", DataType::kFloat32, Shape{1, 256, 14, 14});
    const OnnxModel model = builder.build();
    const TensorMap feed{{"x", random_tensor({1, 64, 28, 28}, 54)}};
    const Tensor one_thread = run_once(*model, 1, feed).at("y");
    SessionOptions options;
    options.num_threads = 2;
    const Session session(*model, options);
    for (int run = 0; run < 8; ++run) {
        const Tensor y = session.run(feed).at("y");
        double worst = 0;
        for (int64_t i = 0; i < y.numel(); ++i)
            worst = std::max(worst, double(std::fabs(y.data_as<float>()[i] - one_thread.data_as<float>()[i])));
        EXPECT_LT(worst, 1e-3) << "run " << run;
    }
}

}  // namespace
}  // namespace polygraphy::ref
