// Models over protobuf's 2 GiB limit, without writing gigabytes: POLYGRAPHY_ONNX_SIZE_LIMIT lowers
// the limit to a few KiB, so that a model with 64 KiB of external weights takes every path a
// multi-GB model takes (issue 15, items 1 and 6). Every tool must work on it, write models that are
// too large with their weights in "<file>.data", and never serialise the weights for ONNX-Runtime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "model_builder.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/file_io.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

constexpr int kLayers = 4;
constexpr int64_t kWidth = 64;  // 16 KiB of float32 weights per layer

// Sets the size limit for the CLI processes the test starts, and restores it afterwards.
class SizeLimit {
public:
    explicit SizeLimit(const char* bytes) { setenv("POLYGRAPHY_ONNX_SIZE_LIMIT", bytes, 1); }
    ~SizeLimit() { unsetenv("POLYGRAPHY_ONNX_SIZE_LIMIT"); }
};

class BigModelCli : public ::testing::Test {
protected:
    void SetUp() override {
        ModelBuilder builder(17, "big");
        builder.input("x", DataType::kFloat32, Shape{2, kWidth});
        std::string previous = "x";
        for (int i = 0; i < kLayers; ++i) {
            const std::string layer = "layer" + std::to_string(i);
            builder.initializer(layer + ".weight", testing::random_tensor({kWidth, kWidth}, static_cast<uint32_t>(i)));
            builder.node("MatMul", {previous, layer + ".weight"}, {layer + ".matmul"}, layer + "/MatMul");
            builder.node("Tanh", {layer + ".matmul"}, {layer + ".out"}, layer + "/Tanh");
            previous = layer + ".out";
        }
        builder.output(previous, DataType::kFloat32, Shape{2, kWidth});
        save_onnx_with_external_data(*builder.build(), model_);
        ASSERT_GT(fs::file_size(model_ + ".data"), 4 * 16000u);
    }

    // The model loads with its weights, and runs on the built-in runtime.
    static void expect_valid_model(const std::string& path) {
        const auto result = run_polygraphy({"run", path, "--ref"});
        EXPECT_EQ(result.exit_code, 0) << result.output;
    }

    TempDir dir_;
    const std::string model_ = dir_.file("big.onnx");
    SizeLimit limit_{"8192"};
};

TEST_F(BigModelCli, TheLimitIsReallyLowered) {
    // Serialising the whole model is what the limit refuses: the paths below must all avoid it.
    const OnnxModel model = onnx_from_path(model_);
    setenv("POLYGRAPHY_ONNX_SIZE_LIMIT", "8192", 1);
    EXPECT_THROW(bytes_from_onnx(*model), PolygraphyException);
    setenv("POLYGRAPHY_ONNX_SIZE_LIMIT", "12abc", 1);
    EXPECT_THAT(testing::error_message<PolygraphyException>([&] { bytes_from_onnx(*model); }),
                HasSubstr("POLYGRAPHY_ONNX_SIZE_LIMIT must be a number of bytes from 1 to 2147483647, not '12abc'"));
    setenv("POLYGRAPHY_ONNX_SIZE_LIMIT", "8192", 1);
}

TEST_F(BigModelCli, OnnxRuntimeRunsItUnchangedAndModifiedWithoutSerialisingTheWeights) {
    const std::vector<std::vector<std::string>> variants = {
        {},
        {"--onnx-outputs", "mark", "all"},
        {"--onnx-outputs", "layer1.out"},
        {"--shape-inference"},
        {"--fp-to-fp16"},
    };
    for (const auto& extra : variants) {
        std::vector<std::string> args = {"run", model_, "--onnxrt", "--ref", "--atol", "1e-2", "--rtol", "1e-2"};
        args.insert(args.end(), extra.begin(), extra.end());
        const auto result = run_polygraphy(args);
        EXPECT_EQ(result.exit_code, 0) << result.output;
        EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched"));
        EXPECT_THAT(result.output, Not(HasSubstr("Cannot serialize")));
    }
}

TEST_F(BigModelCli, RunSaveOnnxWritesTheWeightsBeside) {
    const auto result = run_polygraphy(
        {"run", model_, "--onnxrt", "--onnx-outputs", "mark", "all", "--save-onnx", dir_.file("saved.onnx")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_TRUE(fs::exists(dir_.file("saved.onnx.data")));
    EXPECT_LT(fs::file_size(dir_.file("saved.onnx")), 8192u);
    expect_valid_model(dir_.file("saved.onnx"));
}

TEST_F(BigModelCli, SurgeonAndConvertWriteTheWeightsBeside) {
    const std::vector<std::vector<std::string>> commands = {
        {"surgeon", "sanitize", model_, "--fold-constants", "-o", dir_.file("sanitized.onnx")},
        {"surgeon", "extract", model_, "--inputs", "layer0.out:auto:auto", "--outputs", "layer3.out:auto", "-o",
         dir_.file("extracted.onnx")},
        {"surgeon", "insert", model_, "--inputs", "layer1.out", "--outputs", "layer1.out", "--op", "Relu", "-o",
         dir_.file("inserted.onnx")},
        {"convert", model_, "--fp-to-fp16", "-o", dir_.file("converted.onnx")},
    };
    for (const auto& command : commands) {
        SCOPED_TRACE(command[1]);
        const auto result = run_polygraphy(command);
        ASSERT_EQ(result.exit_code, 0) << result.output;
        const std::string out = command.back();
        EXPECT_TRUE(fs::exists(out + ".data")) << result.output;
        expect_valid_model(out);
    }
}

TEST_F(BigModelCli, CheckLintRunsItsTestInference) {
    const auto result = run_polygraphy({"check", "lint", model_});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, Not(HasSubstr("[E]")));
}

TEST_F(BigModelCli, DebugReduceReducesIt) {
    const std::string artifact = dir_.file("polygraphy_debug.onnx");
    // The check fails while layer 2's Tanh is in the candidate.
    const auto result = run_polygraphy({"debug", "reduce", model_, "-o", dir_.file("reduced.onnx"), "--iter-artifact",
                                        artifact, "--check", "sh", "-c", "! grep -q -a layer2/Tanh " + artifact});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_FALSE(fs::exists(artifact + ".data"));  // removed with its model after each iteration
    const OnnxModel reduced = onnx_from_path(dir_.file("reduced.onnx"));
    ASSERT_EQ(reduced->graph().node_size(), 1);
    EXPECT_EQ(reduced->graph().node(0).name(), "layer2/Tanh");
}

TEST_F(BigModelCli, DebugDiffComparesItWithItsFp16VersionInSlices) {
    const std::string fp16 = dir_.file("fp16.onnx");
    ASSERT_EQ(run_polygraphy({"convert", model_, "--fp-to-fp16", "-o", fp16}).exit_code, 0);
    for (const std::string backend : {"ref", "onnxrt"}) {
        SCOPED_TRACE(backend);
        const std::string report = dir_.file("diff_" + backend + ".json");
        const auto result =
            run_polygraphy({"debug", "diff", model_, fp16, "--backend-b", backend, "--compare-memory-budget", "2K",
                            "--atol", "1e-2", "--rtol", "1e-2", "--report", report});
        ASSERT_EQ(result.exit_code, 0) << result.output;
        EXPECT_THAT(result.output, HasSubstr("slices: its paired tensors do not fit the compare memory budget"));
        EXPECT_THAT(result.output, Not(HasSubstr("Cannot serialize")));
        // The four MatMuls and four Tanhs, each with its local figures.
        const std::string text = read_file(report);
        std::size_t locals = 0;
        for (std::size_t at = text.find("\"local\": {"); at != std::string::npos;
             at = text.find("\"local\": {", at + 1))
            ++locals;
        EXPECT_EQ(locals, 2u * kLayers) << text;
        EXPECT_THAT(text, Not(HasSubstr("\"local\": null")));
    }
}

// A model larger than an ONNX-Runtime session (64 KiB of weights against a 20 KiB budget, as 27 GB
// against a quarter of this machine's memory): each runner runs slices whose weights fit, one session
// each, and the comparison of the outputs gives what the whole run gives.
TEST_F(BigModelCli, AModelLargerThanASessionRunsInSlicesOfSessions) {
    const auto whole = run_polygraphy({"run", model_, "--ref", "--onnxrt", "--iterations", "2", "--atol", "1e-4",
                                       "--report", dir_.file("whole.json")});
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    EXPECT_THAT(whole.output, Not(HasSubstr("slices")));
    for (const bool mark_all : {false, true}) {
        std::vector<std::string> args = {"run",      model_,         "--ref",
                                         "--onnxrt", "--iterations", "2",
                                         "--atol",   "1e-4",         "--session-memory-budget",
                                         "20K",      "--report",     dir_.file("sliced.json")};
        if (mark_all) args.insert(args.end(), {"--onnx-outputs", "mark", "all"});
        const auto sliced = run_polygraphy(args);
        ASSERT_EQ(sliced.exit_code, 0) << sliced.output;
        EXPECT_THAT(sliced.output, HasSubstr("The model's weights (64.0 KiB) exceed the session memory budget of "
                                             "20.0 KiB: running in 4 slices, each a session of its own"));
        EXPECT_THAT(sliced.output, HasSubstr(mark_all ? "PASSED | All outputs matched | Outputs: ['layer0.matmul', "
                                                      : "PASSED | All outputs matched | Outputs: ['layer3.out']"));
    }
    const std::string report = read_file(dir_.file("sliced.json"));
    EXPECT_THAT(report, HasSubstr("\"layer3.out\""));
    // A budget is a size.
    const auto refused = run_polygraphy({"run", model_, "--ref", "--onnxrt", "--session-memory-budget", "0"});
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_THAT(refused.output, HasSubstr("--session-memory-budget must be more than 0 bytes"));
}

TEST_F(BigModelCli, ExternalDataProblemsAreOneLineErrorsOnTheOnnxRuntimePath) {
    fs::resize_file(model_ + ".data", fs::file_size(model_ + ".data") - 100);
    for (const std::vector<std::string>& extra :
         std::vector<std::vector<std::string>>{{}, {"--onnx-outputs", "mark", "all"}}) {
        std::vector<std::string> args = {"run", model_, "--onnxrt"};
        args.insert(args.end(), extra.begin(), extra.end());
        const auto result = run_polygraphy(args);
        EXPECT_EQ(result.exit_code, 1) << result.output;
        EXPECT_THAT(result.output, HasSubstr("runs past the end of 'big.onnx.data'"));
    }
    fs::remove(model_ + ".data");
    const auto missing = run_polygraphy({"run", model_, "--onnxrt", "--onnx-outputs", "mark", "all"});
    EXPECT_EQ(missing.exit_code, 1) << missing.output;
    EXPECT_THAT(missing.output, HasSubstr("external data file 'big.onnx.data' was not found"));
}

}  // namespace
}  // namespace polygraphy
