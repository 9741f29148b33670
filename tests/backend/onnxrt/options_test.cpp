// Provider matching and option names (no ONNX-Runtime library needed).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::onnxrt {
namespace {

const std::vector<std::string> kAvailable = {"TensorrtExecutionProvider", "CUDAExecutionProvider",
                                             "CPUExecutionProvider"};

TEST(OnnxrtProviders, ExactAndCaseInsensitivePartialMatches) {
    EXPECT_EQ(resolve_providers({"cpu"}, kAvailable), std::vector<std::string>{"CPUExecutionProvider"});
    EXPECT_EQ(resolve_providers({"CUDAExecutionProvider"}, kAvailable),
              std::vector<std::string>{"CUDAExecutionProvider"});
    EXPECT_EQ(resolve_providers({"Cuda", "CPU"}, kAvailable),
              (std::vector<std::string>{"CUDAExecutionProvider", "CPUExecutionProvider"}));
    // The available name may also be contained in the request (Polygraphy's rule, both ways).
    EXPECT_EQ(resolve_providers({"my-TensorrtExecutionProvider-please"}, kAvailable),
              std::vector<std::string>{"TensorrtExecutionProvider"});
    // The first available provider that matches wins: "execution" matches all three.
    EXPECT_EQ(resolve_providers({"execution"}, kAvailable), std::vector<std::string>{"TensorrtExecutionProvider"});
}

TEST(OnnxrtProviders, DuplicatesAreKeptOnce) {
    EXPECT_EQ(resolve_providers({"cpu", "CPUExecutionProvider"}, kAvailable),
              std::vector<std::string>{"CPUExecutionProvider"});
}

TEST(OnnxrtProviders, UnknownProviderListsAvailableOnes) {
    try {
        resolve_providers({"cpu", "rocm"}, kAvailable);
        FAIL() << "expected an exception";
    } catch (const PolygraphyException& error) {
        EXPECT_STREQ(error.what(),
                     "Could not find specified ONNX-Runtime execution provider.\nNote: Requested provider was: rocm, "
                     "but available providers are: ['TensorrtExecutionProvider', 'CUDAExecutionProvider', "
                     "'CPUExecutionProvider']");
    }
}

TEST(OnnxrtProviders, EmptyNameMatchesNothing) {
    EXPECT_THROW(resolve_providers({""}, kAvailable), PolygraphyException);
}

TEST(OnnxrtOptions, NamesOfLevelsAndModes) {
    EXPECT_EQ(graph_optimization_level_from_name("disable"), GraphOptimizationLevel::kDisableAll);
    EXPECT_EQ(graph_optimization_level_from_name("basic"), GraphOptimizationLevel::kBasic);
    EXPECT_EQ(graph_optimization_level_from_name("EXTENDED"), GraphOptimizationLevel::kExtended);
    EXPECT_EQ(graph_optimization_level_from_name("all"), GraphOptimizationLevel::kAll);
    EXPECT_EQ(graph_optimization_level_from_name("max"), std::nullopt);
    EXPECT_EQ(execution_mode_from_name("sequential"), ExecutionMode::kSequential);
    EXPECT_EQ(execution_mode_from_name("Parallel"), ExecutionMode::kParallel);
    EXPECT_EQ(execution_mode_from_name("serial"), std::nullopt);
}

TEST(OnnxrtOptions, Defaults) {
    const SessionOptions options;
    EXPECT_EQ(options.providers, std::vector<std::string>{"cpu"});
    EXPECT_EQ(options.intra_op_num_threads, 0);
    EXPECT_EQ(options.inter_op_num_threads, 0);
    EXPECT_EQ(options.graph_optimization_level, GraphOptimizationLevel::kAll);
    EXPECT_EQ(options.execution_mode, ExecutionMode::kSequential);
}

}  // namespace
}  // namespace polygraphy::onnxrt
