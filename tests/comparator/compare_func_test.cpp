// CompareFunc::simple: tolerances, error statistics, special values, shapes, output matching, fail-fast.
// Expected figures are numpy's (the expression is next to each).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "comparator/stats_internal.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/comparator.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::kInf;
using testing::kNaN;

IterationResult iteration(const std::string& runner, std::initializer_list<std::pair<std::string, Tensor>> outputs) {
    IterationResult result;
    for (const auto& [name, tensor] : outputs) result.outputs.set(name, tensor);
    result.runner_name = runner;
    return result;
}

Tensor f32(Shape shape, std::vector<double> values) {
    return Tensor::from_doubles(DataType::kFloat32, shape, values);
}
Tensor f32(std::vector<double> values) {
    return f32({static_cast<int64_t>(values.size())}, values);
}

class CompareFuncTest : public ::testing::Test {
protected:
    void SetUp() override { logger().reset(); }
    void TearDown() override { logger().reset(); }

    // Runs `compare` on (a, b), returning the result and keeping the log in `log_`.
    IterationCompareResult run(const CompareFunc& compare, const IterationResult& a, const IterationResult& b) {
        ::testing::internal::CaptureStdout();
        try {
            IterationCompareResult result = compare(a, b);
            log_ = ::testing::internal::GetCapturedStdout();
            return result;
        } catch (...) {
            log_ = ::testing::internal::GetCapturedStdout();
            throw;
        }
    }

    IterationCompareResult compare_one(const Tensor& x, const Tensor& y, SimpleCompareOptions options = {}) {
        return run(compare_func::simple(std::move(options)), iteration("A", {{"y", x}}), iteration("B", {{"y", y}}));
    }

    std::string log_;
};

SimpleCompareOptions tolerances(double atol, double rtol, ErrorStat stat = ErrorStat::kElemwise) {
    SimpleCompareOptions options;
    options.atol.set("", atol);
    options.rtol.set("", rtol);
    options.check_error_stat.set("", stat);
    return options;
}

TEST(ErrorStatNames, RoundTrip) {
    for (ErrorStat stat :
         {ErrorStat::kElemwise, ErrorStat::kMax, ErrorStat::kMean, ErrorStat::kMedian, ErrorStat::kQuantile})
        EXPECT_EQ(error_stat_from_name(error_stat_name(stat)), stat);
    EXPECT_EQ(error_stat_name(ErrorStat::kQuantile), "quantile");
    EXPECT_FALSE(error_stat_from_name("average").has_value());
}

TEST_F(CompareFuncTest, ElemwiseFailsOnlyWhereBothToleranceAreExceeded) {
    // |100 - 100.5| = 0.5 > atol but 0.5 / 100.5 < rtol: passes.
    EXPECT_TRUE(compare_one(f32({100.0}), f32({100.5}), tolerances(0.1, 0.01)).at("y").passed);
    // |1 - 1.5| = 0.5 > atol and 0.5 / 1.5 > rtol: fails.
    const OutputCompareResult failed = compare_one(f32({1.0, 100.0}), f32({1.5, 100.5}), tolerances(0.1, 0.01)).at("y");
    EXPECT_FALSE(failed.passed);
    EXPECT_DOUBLE_EQ(failed.required_atol, 0.5);                             // np.max(absdiff)
    EXPECT_FLOAT_EQ(static_cast<float>(failed.required_rtol), 1.0f / 3.0f);  // np.max(absdiff / |out1|)
    EXPECT_THAT(log_, HasSubstr("[I]     Tolerance: [abs=0.1, rel=0.01] | Checking elemwise error\n"));
    EXPECT_THAT(log_, HasSubstr("[E]     FAILED | Output: 'y' | Difference exceeds tolerance (rel=0.01, abs=0.1)\n"));
    EXPECT_THAT(log_, HasSubstr("[E] FAILED | Mismatched outputs: ['y']\n"));
    // The failure shows values and histograms at INFO.
    EXPECT_THAT(log_, HasSubstr("---- Values ----"));
    EXPECT_THAT(log_, HasSubstr("---- Histogram ----"));
}

TEST_F(CompareFuncTest, PassingComparisonHidesValuesUnlessVerbose) {
    compare_one(f32({1, 2}), f32({1, 2}));
    EXPECT_THAT(log_,
                HasSubstr("[I]     PASSED | Output: 'y' | Difference is within tolerance (rel=1e-05, abs=1e-05)\n"));
    EXPECT_THAT(log_, HasSubstr("[I] PASSED | All outputs matched | Outputs: ['y']\n"));
    EXPECT_THAT(log_, Not(HasSubstr("---- Values ----")));
    logger().set_severity(Severity::kVerbose);
    compare_one(f32({1, 2}), f32({1, 2}));
    EXPECT_THAT(log_, HasSubstr("[V]         ---- Values ----\n                [1. 2.]\n"));
    EXPECT_THAT(log_, HasSubstr("[V]         ---- Histogram ----"));
}

// out0 = [1, 2, 3, 4, 10], out1 = [1, 2, 3, 4, 5]: absdiff = [0, 0, 0, 0, 5], reldiff = [0, 0, 0, 0, 1].
TEST_F(CompareFuncTest, EveryErrorStatistic) {
    const Tensor x = f32({1, 2, 3, 4, 10}), y = f32({1, 2, 3, 4, 5});
    struct Case {
        ErrorStat stat;
        bool passed;
        double required_atol, required_rtol;
    };
    const std::vector<Case> cases = {
        {ErrorStat::kMax, false, 5.0, 1.0},        // np.max(absdiff), np.max(reldiff)
        {ErrorStat::kMean, true, 1.0, 0.2f},       // np.mean(absdiff, dtype=np.float32): 5 > 0.5 but 0.2 <= 0.5
        {ErrorStat::kMedian, true, 0.0, 0.0},      // np.median
        {ErrorStat::kQuantile, false, 4.8, 0.96},  // np.quantile(absdiff, 0.99), np.quantile(reldiff, 0.99)
        {ErrorStat::kElemwise, false, 5.0, 1.0},
    };
    for (const Case& c : cases) {
        const OutputCompareResult result = compare_one(x, y, tolerances(0.5, 0.5, c.stat)).at("y");
        EXPECT_EQ(result.passed, c.passed) << error_stat_name(c.stat);
        EXPECT_NEAR(result.required_atol, c.required_atol, 1e-6) << error_stat_name(c.stat);
        EXPECT_NEAR(result.required_rtol, c.required_rtol, 1e-6) << error_stat_name(c.stat);
        EXPECT_THAT(log_, HasSubstr("Checking " + error_stat_name(c.stat) + " error"));
        EXPECT_THAT(log_, HasSubstr("Minimum Required Tolerance: " + error_stat_name(c.stat) + " error | [abs="));
        // The quantile line names its quantile, as Polygraphy's `(quantile={:.4g})`.
        if (c.stat == ErrorStat::kQuantile) {
            EXPECT_THAT(log_, HasSubstr("Minimum Required Tolerance: quantile error | [abs=4.8] OR [rel=0.96] "
                                        "(quantile=0.99)\n"));
        }
    }
    EXPECT_THAT(log_, HasSubstr("(requirements may be lower if both abs/rel tolerances are set)"));

    const OutputCompareResult all = compare_one(x, y, tolerances(0.5, 0.5, ErrorStat::kMax)).at("y");
    EXPECT_EQ(all.max_absdiff, 5.0);
    EXPECT_FLOAT_EQ(static_cast<float>(all.mean_absdiff), 1.0f);
    EXPECT_EQ(all.median_absdiff, 0.0);
    EXPECT_NEAR(all.quantile_absdiff, 4.8, 1e-6);
    EXPECT_FLOAT_EQ(static_cast<float>(all.mean_reldiff), 0.2f);
    EXPECT_EQ(all.output_name, "y");
    EXPECT_EQ(all.other_name, "y");

    // A per-output quantile: np.quantile(absdiff, 0.5) == 0 passes.
    SimpleCompareOptions median_quantile = tolerances(0.5, 0.5, ErrorStat::kQuantile);
    median_quantile.error_quantile.set("y", 0.5);
    EXPECT_TRUE(compare_one(x, y, median_quantile).at("y").passed);
    SimpleCompareOptions bad_quantile = tolerances(0.5, 0.5, ErrorStat::kQuantile);
    bad_quantile.error_quantile.set("", 2.0);
    EXPECT_THROW(compare_one(x, y, bad_quantile), UsageError);
}

TEST_F(CompareFuncTest, PerOutputSettingsOverrideTheDefault) {
    SimpleCompareOptions options = tolerances(1e-5, 1e-5);
    options.atol.set("loose", 10.0);
    options.check_error_stat.set("loose", ErrorStat::kMax);
    const IterationCompareResult result =
        run(compare_func::simple(options), iteration("A", {{"strict", f32({1})}, {"loose", f32({1})}}),
            iteration("B", {{"strict", f32({2})}, {"loose", f32({2})}}));
    EXPECT_FALSE(result.at("strict").passed);
    EXPECT_TRUE(result.at("loose").passed);
    EXPECT_THAT(log_, HasSubstr("Tolerance: [abs=10, rel=1e-05] | Checking max error"));
    EXPECT_THAT(log_, HasSubstr("PASSED | Output: 'loose' | Difference is within tolerance (rel=1e-05, abs=10.0)"));

    // Keys naming no output are reported, as Polygraphy's check_sequence_contains does.
    options.rtol.set("nonexistent", 1.0);
    run(compare_func::simple(options), iteration("A", {{"strict", f32({1})}}), iteration("B", {{"strict", f32({1})}}));
    EXPECT_THAT(log_, HasSubstr("[W] Extra items in the rtol dictionary: {'nonexistent'}."));
}

TEST_F(CompareFuncTest, ZerosInTheSecondOutputGetAnEpsilonOnce) {
    const OutputCompareResult result = compare_one(f32({1e-20, 0}), f32({0, 0})).at("y");
    // absdiff 1e-20 <= atol, so it passes; reldiff = 1e-20 / float32(2.22e-16)
    EXPECT_TRUE(result.passed);
    EXPECT_NEAR(result.max_reldiff, 1e-20 / 2.220446049250313e-16, 1e-9);
    EXPECT_THAT(
        log_,
        HasSubstr(
            "[W]     B                                   | Output: y: Some values are 0. Will add a small epsilon"));
    compare_one(f32({1e-20, 0}), f32({0, 0}));
    EXPECT_THAT(log_, Not(HasSubstr("Some values are 0")));  // LogMode.ONCE
}

TEST_F(CompareFuncTest, NaNsAlwaysMismatch) {
    // absdiff is NaN where either is NaN: NaN fails both tolerance checks.
    const OutputCompareResult result = compare_one(f32({1, kNaN}), f32({1, kNaN})).at("y");
    EXPECT_FALSE(result.passed);
    EXPECT_TRUE(std::isnan(result.max_absdiff));
    EXPECT_THAT(log_, HasSubstr("Absolute Difference | Stats: mean=nan"));
    // The max statistic fails on NaN too (Polygraphy's stat_failed treats NaN as a failure).
    EXPECT_FALSE(compare_one(f32({1, kNaN}), f32({1, 2}), tolerances(1, 1, ErrorStat::kMax)).at("y").passed);
}

TEST_F(CompareFuncTest, InfinitiesCompareEqualOnlyWhenAsked) {
    const Tensor x = f32({kInf, -kInf, 1}), y = f32({kInf, -kInf, 1});
    EXPECT_FALSE(compare_one(x, y).at("y").passed);  // inf - inf is NaN
    SimpleCompareOptions options;
    options.infinities_compare_equal = true;
    const OutputCompareResult result = compare_one(x, y, options).at("y");
    EXPECT_TRUE(result.passed);
    EXPECT_EQ(result.max_absdiff, 0.0);
    // Opposite infinities still differ.
    EXPECT_FALSE(compare_one(f32({kInf}), f32({-kInf}), options).at("y").passed);
}

TEST_F(CompareFuncTest, BoolsCompareWithXor) {
    const Tensor a = Tensor::from_doubles(DataType::kBool, {3}, {1, 0, 1});
    EXPECT_TRUE(compare_one(a, a).at("y").passed);
    // Relative difference: XOR / out1 in float64, so 0/0 is NaN (does not fail: the absolute check passes).
    EXPECT_THAT(log_, HasSubstr("Minimum Required Tolerance: elemwise error | [abs=0] OR [rel=nan]"));
    EXPECT_THAT(log_, HasSubstr("Absolute Difference | Stats: mean=0, std-dev=0, var=0, median=0, min=0 at (0,), max=0 "
                                "at (0,), avg-magnitude=0\n"));
    const OutputCompareResult differs = compare_one(a, Tensor::from_doubles(DataType::kBool, {3}, {1, 1, 1})).at("y");
    EXPECT_FALSE(differs.passed);
    EXPECT_EQ(differs.max_absdiff, 1.0);
}

TEST_F(CompareFuncTest, ShapeMismatchFailsUnlessShapeChecksAreOff) {
    const Tensor x = f32({2, 3}, {0, 1, 2, 3, 4, 5});
    const Tensor transposed = f32({3, 2}, {0, 3, 1, 4, 2, 5});
    const OutputCompareResult strict = compare_one(x, transposed).at("y");
    EXPECT_FALSE(strict.passed);
    EXPECT_EQ(strict.error, "Will not compare outputs of different shapes.");
    EXPECT_THAT(log_, HasSubstr("[E]     FAILED | Output: `y` | Will not compare outputs of different shapes.\n"
                                "        Note: Output shapes are (2, 3) and (3, 2).\n"));
    EXPECT_THAT(
        log_,
        HasSubstr(
            "[E]     Note: Use --no-shape-check or set check_shapes=False to attempt to compare values anyway.\n"));

    SimpleCompareOptions loose;
    loose.check_shapes = false;
    // Same rank: permuted (a real transpose) to the first output's shape.
    EXPECT_TRUE(compare_one(x, transposed, loose).at("y").passed);
    EXPECT_THAT(
        log_,
        HasSubstr("[I] Strict shape checking disabled. Will attempt to match output shapes before comparisons\n"));
    EXPECT_THAT(log_, HasSubstr("Permuted array of shape: (3, 2) to: (2, 3) using permutation [1, 0]"));
    // Rank 3: out1 = np.transpose(out0, (2, 0, 1)) is permuted back with [1, 2, 0].
    std::vector<double> cube, rotated(24);
    for (int i = 0; i < 24; ++i) cube.push_back(i);
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 4; ++k)
                rotated[static_cast<std::size_t>(k * 6 + i * 3 + j)] =
                    cube[static_cast<std::size_t>(i * 12 + j * 4 + k)];
    EXPECT_TRUE(compare_one(f32({2, 3, 4}, cube), f32({4, 2, 3}, rotated), loose).at("y").passed);
    EXPECT_THAT(log_, HasSubstr("Permuted array of shape: (4, 2, 3) to: (2, 3, 4) using permutation [1, 2, 0]"));
    // Different rank, same volume: reshaped.
    EXPECT_TRUE(compare_one(x, f32({1, 6}, {0, 1, 2, 3, 4, 5}), loose).at("y").passed);
    EXPECT_THAT(log_, HasSubstr("Reshaped array from shape: (1, 6) to: (2, 3)"));
    // Different volume: cannot be compared.
    const OutputCompareResult impossible = compare_one(x, f32({4}, {0, 1, 2, 3}), loose).at("y");
    EXPECT_FALSE(impossible.passed);
    EXPECT_EQ(impossible.error, "Could not match the shape of 'y' (4,) to the shape of 'y' (2, 3)");
}

TEST_F(CompareFuncTest, MixedDtypesArePromotedLikeNumpy) {
    const Tensor half = Tensor::from_doubles(DataType::kFloat16, {2}, {0.5, 1.25});
    EXPECT_TRUE(compare_one(f32({0.5, 1.25}), half).at("y").passed);
    const Tensor ints = Tensor::from_doubles(DataType::kInt32, {3}, {0, 5, -7});
    const Tensor longs = Tensor::from_doubles(DataType::kInt64, {3}, {0, 5, -9});
    const OutputCompareResult result = compare_one(ints, longs, tolerances(1, 0.1)).at("y");
    EXPECT_FALSE(result.passed);  // |-7 - -9| = 2 > 1 and 2 / 9 > 0.1
    EXPECT_EQ(result.max_absdiff, 2.0);
    // Integer zeros get no epsilon: 0 / 0 is NaN, not a failure since the absolute error passes.
    EXPECT_THAT(log_, Not(HasSubstr("Some values are 0")));
    EXPECT_THAT(log_, HasSubstr("Relative Difference | Stats: mean=nan"));
}

TEST_F(CompareFuncTest, OutputsMatchByNameThenSubstringThenPosition) {
    const CompareFunc compare = compare_func::simple();
    // Case-insensitive substring.
    IterationCompareResult result =
        run(compare, iteration("A", {{"logits", f32({1})}}), iteration("B", {{"Model/LOGITS:0", f32({1})}}));
    EXPECT_TRUE(result.at("logits").passed);
    EXPECT_EQ(result.at("logits").other_name, "Model/LOGITS:0");
    EXPECT_THAT(
        log_,
        HasSubstr(
            "[W] Output names did not match exactly. Assuming B output: Model/LOGITS:0 corresponds to output: logits"));
    EXPECT_THAT(log_, HasSubstr("Comparing Output: 'logits' (dtype=float32, shape=(1,)) with 'Model/LOGITS:0' "
                                "(dtype=float32, shape=(1,))"));

    // Position.
    result = run(compare, iteration("A", {{"a", f32({1})}, {"b", f32({2})}}),
                 iteration("B", {{"p", f32({1})}, {"q", f32({2})}}));
    EXPECT_EQ(result.at("a").other_name, "p");
    EXPECT_EQ(result.at("b").other_name, "q");

    // A non-exact candidate that is another output's exact match is skipped.
    logger().set_severity(Severity::kVerbose);
    result = run(compare, iteration("A", {{"x", f32({1})}, {"xy", f32({2})}}), iteration("B", {{"xy", f32({2})}}));
    EXPECT_EQ(result.size(), 1u);
    EXPECT_TRUE(result.at("xy").passed);
    EXPECT_THAT(log_, HasSubstr("[V] Will not compare xy with x, since the former already has an exact match: xy"));

    // Nothing in common.
    try {
        run(compare, iteration("A", {{"x", f32({1})}}), iteration("B", {}));
        FAIL() << "expected PolygraphyException";
    } catch (const PolygraphyException& error) {
        EXPECT_STREQ(error.what(),
                     "All outputs were skipped, no common outputs found!\nNote: A outputs: ['x']\nNote: B outputs: []");
    }
}

TEST_F(CompareFuncTest, FailFastStopsAtTheFirstMismatch) {
    SimpleCompareOptions options;
    options.fail_fast = true;
    const IterationCompareResult result =
        run(compare_func::simple(options), iteration("A", {{"a", f32({1})}, {"b", f32({1})}}),
            iteration("B", {{"a", f32({2})}, {"b", f32({2})}}));
    EXPECT_EQ(result.size(), 1u);
    EXPECT_FALSE(result.at("a").passed);
    EXPECT_THAT(log_, Not(HasSubstr("Comparing Output: 'b'")));
    EXPECT_THAT(log_, Not(HasSubstr("Mismatched outputs")));
}

TEST_F(CompareFuncTest, StringOutputsAreReportedNotCompared) {
    Tensor text(DataType::kString, {1});
    text.strings()[0] = "a";
    const OutputCompareResult result = compare_one(text, text).at("y");
    EXPECT_FALSE(result.passed);
    EXPECT_EQ(result.error, "Cannot compare outputs of types string and string");
}

TEST_F(CompareFuncTest, LargeOutputsMatchTheSmallPath) {
    // The fused sweep with two threads, whatever the machine's load.
    struct TwoThreads {
        TwoThreads() { stats::detail::set_threads_override(2); }
        ~TwoThreads() { stats::detail::set_threads_override(0); }
    } two_threads;
    // 200,000 elements go through the fused float32 sweep with radix selection; a 3-element tail decides.
    std::vector<double> x, y;
    for (int i = 0; i < 200000; ++i) {
        x.push_back((i % 1000) * 0.01);
        y.push_back((i % 1000) * 0.01 + ((i % 7) == 0 ? 1e-3 : 0.0));
    }
    const OutputCompareResult result = compare_one(f32({static_cast<int64_t>(x.size())}, x),
                                                   f32({static_cast<int64_t>(y.size())}, y), tolerances(1e-2, 1e-2))
                                           .at("y");
    EXPECT_TRUE(result.passed);
    // numpy: a = (np.arange(200000) % 1000 * 0.01).astype(np.float32); b likewise + 1e-3 every 7th
    EXPECT_NEAR(result.max_absdiff, 1e-3, 1e-6);
    EXPECT_EQ(result.median_absdiff, 0.0);
    EXPECT_THAT(log_, HasSubstr("A: y | Stats: mean=4.995, "));
}

}  // namespace
}  // namespace polygraphy

namespace polygraphy {
namespace {

Tensor i64(Shape shape, std::vector<double> values) {
    return Tensor::from_doubles(DataType::kInt64, shape, values);
}

TEST_F(CompareFuncTest, IndicesAllowsDisplacementUpToTheTolerance) {
    // compare.py CompareFunc.indices docstring: [0, 1, 2] vs [1, 0, 2] needs tolerance 1; [1, 2, 0] needs 2.
    auto compare = [&](const Tensor& x, const Tensor& y, int64_t tolerance) {
        PerOutput<int64_t> tolerances;
        tolerances.set("", tolerance);
        return run(compare_func::indices(tolerances), iteration("A", {{"topk", x}}), iteration("B", {{"topk", y}}))
            .at("topk")
            .passed;
    };
    EXPECT_FALSE(compare(i64({3}, {0, 1, 2}), i64({3}, {1, 0, 2}), 0));
    EXPECT_THAT(log_, HasSubstr("[E]     FAILED | Difference exceeds index tolerance (0)\n"));
    EXPECT_THAT(log_, HasSubstr("---- Values ----"));  // a failure shows the values
    EXPECT_TRUE(compare(i64({3}, {0, 1, 2}), i64({3}, {1, 0, 2}), 1));
    EXPECT_THAT(log_, HasSubstr("[I]     PASSED | Difference is within index tolerance (1)\n"));
    EXPECT_FALSE(compare(i64({3}, {0, 1, 2}), i64({3}, {1, 2, 0}), 1));
    EXPECT_TRUE(compare(i64({3}, {0, 1, 2}), i64({3}, {1, 2, 0}), 2));
    // Each row of a 2-D output is its own batch.
    EXPECT_TRUE(compare(i64({2, 2}, {0, 1, 5, 6}), i64({2, 2}, {0, 1, 5, 6}), 0));
    EXPECT_FALSE(compare(i64({2, 2}, {0, 1, 5, 6}), i64({2, 2}, {0, 1, 6, 7}), 0));
    EXPECT_THAT(log_, HasSubstr("[E]     FAILED | Value: 5 not found in output\n"));
    // Values print as the Python numbers numpy's f-string formatting makes of them: float32 0.1 as
    // the double it holds, booleans as True/False.
    EXPECT_FALSE(compare(Tensor::from_doubles(DataType::kFloat32, {2}, {0.1, 2}),
                         Tensor::from_doubles(DataType::kFloat32, {2}, {2, 3}), 0));
    EXPECT_THAT(log_, HasSubstr("[E]     FAILED | Value: 0.10000000149011612 not found in output\n"));
    EXPECT_FALSE(compare(Tensor::from_doubles(DataType::kFloat16, {1}, {0.1}),
                         Tensor::from_doubles(DataType::kFloat16, {1}, {1}), 0));
    EXPECT_THAT(log_, HasSubstr("[E]     FAILED | Value: 0.0999755859375 not found in output\n"));
    EXPECT_FALSE(
        compare(Tensor::from_doubles(DataType::kBool, {1}, {1}), Tensor::from_doubles(DataType::kBool, {1}, {0}), 0));
    EXPECT_THAT(log_, HasSubstr("[E]     FAILED | Value: True not found in output\n"));
    EXPECT_FALSE(compare(i64({2}, {0, 1}), i64({3}, {0, 1, 2}), 0));
    EXPECT_THAT(log_, HasSubstr("[E]     Cannot compare outputs of different shapes.\n"));

    PerOutput<int64_t> negative;
    negative.set("topk", -1);
    try {
        compare_func::indices(negative);
        FAIL() << "expected UsageError";
    } catch (const UsageError& error) {
        EXPECT_STREQ(error.what(), "Index tolerance must not be negative.\nNote: given: -1 for output 'topk'");
    }
}

}  // namespace
}  // namespace polygraphy
