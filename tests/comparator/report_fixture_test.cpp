// The comparison report of Polygraphy's own run_results.json fixture, rebuilt in memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/comparator.h"
#include "build_paths.h"

namespace polygraphy {
namespace {

constexpr const char* kOnnxrt = "onnxrt-runner-N0-11/21/26-09:30:00";
constexpr const char* kTrt = "trt-runner-N0-11/21/26-09:30:00";

// fixtures/polygraphy-json/README.md: logits = [[0,1,2],[3,4,5]] * s, indices, mask, half, scalar.
IterationResult fixture_iteration(double scale, const std::string& runner, double runtime) {
    IterationResult result;
    std::vector<double> logits;
    for (int k = 0; k < 6; ++k) logits.push_back(k * scale);
    result.outputs.set("logits", Tensor::from_doubles(DataType::kFloat32, {2, 3}, logits));
    result.outputs.set("indices", Tensor::from_doubles(DataType::kInt64, {4}, {3, 1, 4, 1}));
    result.outputs.set("mask", Tensor::from_doubles(DataType::kBool, {2, 2}, {1, 0, 0, 1}));
    result.outputs.set("half", Tensor::from_doubles(DataType::kFloat16, {3}, {0.5, -1.25, 65504}));
    result.outputs.set("scalar", Tensor::from_doubles(DataType::kFloat64, {}, {2.5}));
    result.runtime = runtime;
    result.runner_name = runner;
    return result;
}

RunResults fixture_results() {
    RunResults results;
    results.add({fixture_iteration(1.0, kOnnxrt, 0.00125), fixture_iteration(2.0, kOnnxrt, 0.0011)}, kOnnxrt);
    results.add({fixture_iteration(1.0001, kTrt, 0.0004), fixture_iteration(2.0, kTrt, 0.0003)}, kTrt);
    return results;
}

class ReportFixture : public ::testing::Test {
protected:
    void SetUp() override { logger().reset(); }
    void TearDown() override { logger().reset(); }

    std::string compare_and_capture(AccuracyResult& accuracy) {
        ::testing::internal::CaptureStdout();
        accuracy = Comparator::compare_accuracy(fixture_results());
        return ::testing::internal::GetCapturedStdout();
    }
};

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    return lines;
}

TEST_F(ReportFixture, KeyLinesMatchPolygraphy) {
    AccuracyResult accuracy;
    const std::vector<std::string> lines = split_lines(compare_and_capture(accuracy));
    // Copied verbatim from compare_report.txt.
    const std::vector<std::string> expected = {
        "[I] Accuracy Comparison | onnxrt-runner-N0-11/21/26-09:30:00 vs. trt-runner-N0-11/21/26-09:30:00",
        "[I]     Iteration: 0",
        "[I]         Comparing Output: 'logits' (dtype=float32, shape=(2, 3)) with 'logits' (dtype=float32, shape=(2, "
        "3))",
        "[I]             Tolerance: [abs=1e-05, rel=1e-05] | Checking elemwise error",
        "[W]             trt-runner-N0-11/21/26-09:30:00     | Output: logits: Some values are 0. Will add a small "
        "epsilon quantity to these when computing relative difference. Note that this may cause some relative "
        "differences to be extremely high. ",
        "[I]             onnxrt-runner-N0-11/21/26-09:30:00: logits | Stats: mean=2.5, std-dev=1.7078, var=2.9167, "
        "median=2.5, min=0 at (0, 0), max=5 at (1, 2), avg-magnitude=2.5, p90=4.5, p95=4.75, p99=4.95",
        "[I]             trt-runner-N0-11/21/26-09:30:00: logits | Stats: mean=2.5002, std-dev=1.708, var=2.9172, "
        "median=2.5002, min=0 at (0, 0), max=5.0005 at (1, 2), avg-magnitude=2.5002, p90=4.5005, p95=4.7505, "
        "p99=4.9505",
        "[I]                 Minimum Required Tolerance: elemwise error | [abs=0.0005002] OR [rel=0.00010003] "
        "(requirements may be lower if both abs/rel tolerances are set)",
        "[I]                 Absolute Difference | Stats: mean=0.00025004, std-dev=0.00017083, var=2.9184e-08, "
        "median=0.00024998, min=0 at (0, 0), max=0.0005002 at (1, 2), avg-magnitude=0.00025004, p90=0.00045013, "
        "p95=0.00047517, p99=0.0004952",
        "[I]                 Relative Difference | Stats: mean=8.3336e-05, std-dev=3.7269e-05, var=1.389e-09, "
        "median=0.00010001, min=0 at (0, 0), max=0.00010003 at (1, 2), avg-magnitude=8.3336e-05, p90=0.00010002, "
        "p95=0.00010002, p99=0.00010003",
        "[E]             FAILED | Output: 'logits' | Difference exceeds tolerance (rel=1e-05, abs=1e-05)",
        "[I]             onnxrt-runner-N0-11/21/26-09:30:00: indices | Stats: mean=2.25, std-dev=1.299, var=1.6875, "
        "median=2, min=1 at (1,), max=4 at (2,), avg-magnitude=2.25, p90=3.7, p95=3.85, p99=3.97",
        "[I]             PASSED | Output: 'indices' | Difference is within tolerance (rel=1e-05, abs=1e-05)",
        "[I]             onnxrt-runner-N0-11/21/26-09:30:00: mask | Stats: mean=0.5, std-dev=0.5, var=0.25, "
        "median=0.5, "
        "min=0 at (0, 1), max=1 at (0, 0), avg-magnitude=0.5",
        "[I]                 Minimum Required Tolerance: elemwise error | [abs=0] OR [rel=nan] (requirements may be "
        "lower if both abs/rel tolerances are set)",
        "[I]                 Absolute Difference | Stats: mean=0, std-dev=0, var=0, median=0, min=0 at (0, 0), max=0 "
        "at (0, 0), avg-magnitude=0",
        "[I]                 Relative Difference | Stats: mean=nan, std-dev=nan, var=nan, median=nan, min=nan at (0, "
        "1), max=nan at (0, 1), avg-magnitude=nan, p90=nan, p95=nan, p99=nan",
        "[I]             onnxrt-runner-N0-11/21/26-09:30:00: half | Stats: mean=21834, std-dev=30879, var=9.5352e+08, "
        "median=0.5, min=-1.25 at (1,), max=65504 at (2,), avg-magnitude=21835, p90=52403, p95=58954, p99=64194",
        "[I]             onnxrt-runner-N0-11/21/26-09:30:00: scalar | Stats: mean=2.5, std-dev=0, var=0, median=2.5, "
        "min=2.5 at (), max=2.5 at (), avg-magnitude=2.5, p90=2.5, p95=2.5, p99=2.5",
        "[E]         FAILED | Mismatched outputs: ['logits']",
        "[I]     Iteration: 1",
        "[I]         PASSED | All outputs matched | Outputs: ['logits', 'indices', 'mask', 'half', 'scalar']",
        "[E] Accuracy Summary | onnxrt-runner-N0-11/21/26-09:30:00 vs. trt-runner-N0-11/21/26-09:30:00 | Passed: 1/2 "
        "iterations | Pass Rate: 50.0%",
    };
    for (const std::string& line : expected) EXPECT_THAT(lines, ::testing::Contains(line));
    // The epsilon warning is logged once, although iteration 1 has zeros too.
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [](const std::string& l) { return l.find("Some values are 0") != std::string::npos; }),
              1);

    EXPECT_FALSE(static_cast<bool>(accuracy));
    ASSERT_EQ(accuracy.pairs.size(), 1u);
    EXPECT_EQ(accuracy.pairs[0].first_runner, kOnnxrt);
    EXPECT_EQ(accuracy.pairs[0].second_runner, kTrt);
    EXPECT_EQ(accuracy.pairs[0].passed_iterations(), 1u);
    EXPECT_DOUBLE_EQ(accuracy.percentage(), 0.5);
    const OutputCompareResult& logits = accuracy.pairs[0].iterations[0].at("logits");
    EXPECT_FALSE(logits.passed);
    EXPECT_NEAR(logits.required_atol, 0.0005002, 1e-7);
    EXPECT_NEAR(logits.required_rtol, 0.00010003, 1e-8);
    EXPECT_TRUE(accuracy.pairs[0].iterations[1].at("logits").passed);
}

TEST_F(ReportFixture, WholeReportMatchesPolygraphyByteForByte) {
    const char* override_dir = std::getenv("POLYGRAPHY_SHARED_DIR");
    const std::filesystem::path path = std::filesystem::path(override_dir ? override_dir : POLYGRAPHY_SHARED_DIR) /
                                       "fixtures/polygraphy-json/compare_report.txt";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture not available: " << path;
    std::ifstream file(path);
    std::vector<std::string> expected;
    bool inside = false;
    for (std::string line; std::getline(file, line);) {
        if (line.rfind("[I] Accuracy Comparison", 0) == 0) inside = true;
        if (!inside) continue;
        // numpy's RuntimeWarning (two lines on stderr, interleaved by the capture) is not ours to print.
        if (line.rfind("polygraphy/util/array.py", 0) == 0 || line.rfind("  \"numpy\": lambda", 0) == 0) continue;
        expected.push_back(line);
        if (line.rfind("[E] Accuracy Summary", 0) == 0) break;
    }
    ASSERT_GT(expected.size(), 100u);

    AccuracyResult accuracy;
    std::vector<std::string> actual = split_lines(compare_and_capture(accuracy));
    // Beyond Polygraphy, after its last line: the dataset summary of the two samples.
    ASSERT_GT(actual.size(), expected.size());
    EXPECT_EQ(actual[expected.size()].rfind("[I] Dataset Summary | onnxrt-runner-N0-11/21/26-09:30:00 vs. ", 0), 0u);
    actual.resize(expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(actual[i], expected[i]) << "line " << i + 1;
}

}  // namespace
}  // namespace polygraphy
