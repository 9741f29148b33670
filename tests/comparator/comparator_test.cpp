// Comparator::run with fake runners, compare_accuracy over several results, validate.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

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

// y = x * scale, written into the same buffer every time (as real backends may do).
class ScaleRunner : public BaseRunner {
public:
    ScaleRunner(std::string name, float scale, DataType input_dtype = DataType::kFloat32)
        : BaseRunner("scale-runner", std::move(name)), scale_(scale), input_dtype_(input_dtype) {}

    int infer_calls = 0;
    std::vector<DataType> seen_dtypes;
    bool throw_on_infer = false;

protected:
    TensorMetadata get_input_metadata_impl() override {
        TensorMetadata metadata;
        metadata.add("x", input_dtype_, to_dyn_shape({1, 3}));
        return metadata;
    }
    TensorMap infer_impl(const TensorMap& feed) override {
        ++infer_calls;
        if (throw_on_infer) throw InputError("ScaleRunner | refusing to run");
        const Tensor& x = feed.at("x");
        seen_dtypes.push_back(x.dtype());
        if (!output_.defined()) output_ = Tensor(DataType::kFloat32, {1, 3});
        for (int64_t i = 0; i < 3; ++i) output_.data_as<float>()[i] = static_cast<float>(x.value_as_double(i)) * scale_;
        set_inference_time(0.001);
        TensorMap outputs;
        outputs.set("y", output_);
        return outputs;
    }

private:
    float scale_;
    DataType input_dtype_;
    Tensor output_;
};

// Feeds x = [[i, i + 1, i + 2]] for iterations 0..count-1, counting calls.
struct CountingLoader {
    int count;
    std::shared_ptr<int> calls = std::make_shared<int>(0);

    DataLoaderFn function() const {
        auto calls_ = calls;
        const int total = count;
        return [calls_, total](std::size_t iteration, const TensorMetadata&) -> std::optional<TensorMap> {
            ++*calls_;
            if (iteration >= static_cast<std::size_t>(total)) return std::nullopt;
            const double base = static_cast<double>(iteration);
            TensorMap feed;
            feed.set("x", Tensor::from_doubles(DataType::kFloat32, {1, 3}, {base, base + 1, base + 2}));
            return feed;
        };
    }
};

class ComparatorTest : public ::testing::Test {
protected:
    void SetUp() override { logger().reset(); }
    void TearDown() override { logger().reset(); }

    template <typename Fn>
    auto capture(Fn&& fn) {
        ::testing::internal::CaptureStdout();
        try {
            auto result = fn();
            log_ = ::testing::internal::GetCapturedStdout();
            return result;
        } catch (...) {
            log_ = ::testing::internal::GetCapturedStdout();
            throw;
        }
    }

    std::string log_;
};

TEST_F(ComparatorTest, RunFeedsEveryRunnerTheSameDataAndClonesOutputs) {
    ScaleRunner a("runner-a", 1.0f), b("runner-b", 2.0f);
    CountingLoader loader{2};
    const RunResults results = capture([&] {
        return Comparator::run({&a, &b}, loader.function(), Comparator::RunOptions{});
    });

    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results.lst[0].first, "runner-a");
    EXPECT_EQ(results.lst[1].first, "runner-b");
    ASSERT_EQ(results.lst[0].second.size(), 2u);
    // Iteration 0 kept its own values although the runner reused its buffer for iteration 1.
    EXPECT_EQ(results.lst[0].second[0].outputs.at("y").value_as_double(2), 2.0);
    EXPECT_EQ(results.lst[0].second[1].outputs.at("y").value_as_double(2), 3.0);
    EXPECT_EQ(results.lst[1].second[1].outputs.at("y").value_as_double(0), 2.0);
    EXPECT_EQ(results.lst[1].second[0].runner_name, "runner-b");
    EXPECT_DOUBLE_EQ(*results.lst[1].second[0].runtime, 0.001);
    EXPECT_EQ(*loader.calls, 3);  // generated once (2 feeds and the end), then reused
    EXPECT_FALSE(a.is_active());

    EXPECT_THAT(log_, HasSubstr("[I] runner-a                            | Activating and starting inference\n"));
    EXPECT_THAT(log_, HasSubstr("[I] runner-a                           \n    ---- Inference Input(s) ----\n    {x "
                                "[dtype=float32, shape=(1, 3)]}\n"));
    EXPECT_THAT(log_, HasSubstr("[I] runner-b                           \n    ---- Inference Output(s) ----\n    {y "
                                "[dtype=float32, shape=(1, 3)]}\n"));
    EXPECT_THAT(log_, HasSubstr("[I] runner-b                            | Completed 2 iteration(s) in 2 ms | Average "
                                "inference time: 1 ms.\n"));
    // Metadata is shown for the first iteration only.
    const auto first = log_.find("---- Inference Input(s) ----");
    EXPECT_EQ(log_.find("---- Inference Input(s) ----", log_.find("runner-b                            | Activating")),
              log_.rfind("---- Inference Input(s) ----"));
    EXPECT_NE(first, log_.rfind("---- Inference Input(s) ----"));
}

TEST_F(ComparatorTest, RunHandsEachIterationOverAsSoonAsItIsDone) {
    ScaleRunner a("runner-a", 1.0f), b("runner-b", 2.0f);
    std::vector<std::string> seen;
    const RunResults results = capture([&] {
        return Comparator::run({&a, &b}, CountingLoader{2}.function(), {},
                               [&](const std::string& runner, std::size_t iteration, const IterationResult& result) {
                                   // Called before runner-b has run at all, with the values run() returns.
                                   seen.push_back(runner + " " + std::to_string(iteration) + " " +
                                                  std::to_string(b.infer_calls) + " " +
                                                  std::to_string(result.outputs.at("y").value_as_double(0)));
                               });
    });
    EXPECT_THAT(seen, ::testing::ElementsAre("runner-a 0 0 0.000000", "runner-a 1 0 1.000000", "runner-b 0 1 0.000000",
                                             "runner-b 1 2 2.000000"));
    EXPECT_EQ(results.lst[1].second[1].outputs.at("y").value_as_double(0), 2.0);
}

TEST_F(ComparatorTest, RunCoercesCachedInputsToEachRunner) {
    ScaleRunner a("a", 1.0f), b("b", 1.0f, DataType::kFloat64);
    CountingLoader loader{1};
    capture([&] { return Comparator::run({&a, &b}, loader.function(), {}); });
    ASSERT_EQ(b.seen_dtypes.size(), 1u);
    EXPECT_EQ(b.seen_dtypes[0], DataType::kFloat64);
    EXPECT_EQ(*loader.calls, 2);
}

TEST_F(ComparatorTest, RunWarmsUp) {
    ScaleRunner a("a", 1.0f);
    CountingLoader loader{1};
    Comparator::RunOptions options;
    options.warm_up = 3;
    capture([&] { return Comparator::run({&a}, loader.function(), options); });
    EXPECT_EQ(a.infer_calls, 4);
    EXPECT_THAT(log_, HasSubstr("[I] a                                   | Running 3 warm-up run(s)\n"));
    EXPECT_THAT(log_, HasSubstr("[I] a                                   | Finished 3 warm-up run(s)\n"));
    EXPECT_THAT(log_, HasSubstr("| Completed 1 iteration(s) in 1 ms | Average inference time: 1 ms."));

    ScaleRunner idle("idle", 1.0f);
    capture([&] { return Comparator::run({&idle}, CountingLoader{0}.function(), options); });
    EXPECT_EQ(idle.infer_calls, 0);
    EXPECT_THAT(log_, HasSubstr("[W] Data loader did not yield any input data.\n"));
    EXPECT_THAT(
        log_,
        HasSubstr(
            "[W] 3 warm-up run(s) were requested, but data loader did not supply any data. Skipping warm-up run(s)\n"));
}

TEST_F(ComparatorTest, RunSavesTheGeneratedInputsOnce) {
    const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                       ("polygraphy_comparator_inputs_" + std::to_string(::getpid()) + ".json");
    ScaleRunner a("a", 1.0f), b("b", 2.0f);
    Comparator::RunOptions options;
    options.save_inputs_path = path.string();
    capture([&] { return Comparator::run({&a, &b}, CountingLoader{2}.function(), options); });
    const InputList saved = load_inputs(path.string());
    std::filesystem::remove(path);
    ASSERT_EQ(saved.size(), 2u);
    EXPECT_EQ(saved[1].at("x").value_as_double(0), 1.0);
    const std::string line = "[I] Saving inference input data to " + path.string() + "\n";
    EXPECT_THAT(log_, HasSubstr(line));
    EXPECT_EQ(log_.find(line), log_.rfind(line));
}

TEST_F(ComparatorTest, RunWithoutRunnersWarns) {
    const RunResults results = capture([&] { return Comparator::run({}, CountingLoader{1}.function(), {}); });
    EXPECT_TRUE(results.empty());
    EXPECT_THAT(log_, HasSubstr("[W] No runners were provided to Comparator.run(). Inference will not be run, and run "
                                "results will be empty.\n"));
}

TEST_F(ComparatorTest, RunRejectsBadArgumentsAndDeactivatesOnFailure) {
    ScaleRunner a("a", 1.0f);
    EXPECT_THROW(Comparator::run({nullptr}, CountingLoader{1}.function(), {}), PolygraphyException);
    EXPECT_THROW(Comparator::run({&a}, DataLoaderFn{}, {}), PolygraphyException);
    Comparator::RunOptions negative;
    negative.warm_up = -1;
    try {
        Comparator::run({&a}, CountingLoader{1}.function(), negative);
        FAIL() << "expected UsageError";
    } catch (const UsageError& error) {
        EXPECT_STREQ(error.what(), "The number of warm-up runs must not be negative.\nNote: given: -1");
    }
    a.throw_on_infer = true;
    EXPECT_THROW(capture([&] { return Comparator::run({&a}, CountingLoader{1}.function(), {}); }), InputError);
    EXPECT_FALSE(a.is_active());
}

IterationResult one_output(double value, const std::string& runner = "") {
    IterationResult result;
    result.outputs.set("y", Tensor::from_doubles(DataType::kFloat32, {2}, {value, 1.0}));
    result.runner_name = runner;
    return result;
}

TEST_F(ComparatorTest, CompareAccuracyComparesConsecutivePairs) {
    RunResults results;
    results.add({one_output(1.0, "a")}, "a");
    results.add({one_output(1.0, "b")}, "b");
    results.add({one_output(5.0, "c")}, "c");
    const AccuracyResult accuracy = capture([&] { return Comparator::compare_accuracy(results); });
    ASSERT_EQ(accuracy.pairs.size(), 2u);
    EXPECT_EQ(accuracy.pairs[0].first_runner, "a");
    EXPECT_EQ(accuracy.pairs[1].second_runner, "c");
    EXPECT_EQ(accuracy.percentage(0), 1.0);
    EXPECT_EQ(accuracy.percentage(1), 0.0);
    EXPECT_FALSE(static_cast<bool>(accuracy));
    EXPECT_THAT(
        log_,
        HasSubstr("[I] Accuracy Comparison | a vs. b\n[I]     Comparing Output: 'y'"));  // one iteration: no header
    EXPECT_THAT(log_, HasSubstr("[I] Accuracy Summary | a vs. b | Passed: 1/1 iterations | Pass Rate: 100.0%\n"));
    EXPECT_THAT(log_, HasSubstr("[E] Accuracy Summary | b vs. c | Passed: 0/1 iterations | Pass Rate: 0.0%\n"));
    EXPECT_THAT(log_, Not(HasSubstr("Iteration: 0")));
    try {
        (void)accuracy.percentage(2);
        FAIL() << "expected PolygraphyException";
    } catch (const PolygraphyException& error) {
        EXPECT_STREQ(error.what(), "No comparison with index 2 in this accuracy result.\nNote: it has 2 comparison(s)");
    }
}

TEST_F(ComparatorTest, CompareAccuracyCountsIterationsAndFailsFast) {
    RunResults results;
    results.add({one_output(1.0), one_output(2.0), one_output(3.0)}, "a");
    results.add({one_output(1.0), one_output(9.0)}, "b");  // fewer iterations: the shorter count wins
    AccuracyResult accuracy = capture([&] { return Comparator::compare_accuracy(results); });
    ASSERT_EQ(accuracy.pairs[0].iterations.size(), 2u);
    EXPECT_EQ(accuracy.pairs[0].passed_iterations(), 1u);
    EXPECT_DOUBLE_EQ(accuracy.percentage(), 0.5);
    EXPECT_THAT(log_, HasSubstr("[I]     Iteration: 1\n[I]         Comparing Output: 'y'"));
    // Unnamed iterations are reported under their entry's name.
    EXPECT_THAT(log_, HasSubstr("[I]             b: y | Stats: "));
    EXPECT_THAT(log_, HasSubstr("Passed: 1/2 iterations | Pass Rate: 50.0%"));

    RunResults failing_first;
    failing_first.add({one_output(1.0), one_output(2.0)}, "a");
    failing_first.add({one_output(7.0), one_output(2.0)}, "b");
    accuracy = capture([&] { return Comparator::compare_accuracy(failing_first, compare_func::simple(), true); });
    EXPECT_EQ(accuracy.pairs[0].iterations.size(), 1u);
    EXPECT_FALSE(static_cast<bool>(accuracy));
    EXPECT_THAT(log_, Not(HasSubstr("Accuracy Summary")));
}

TEST_F(ComparatorTest, AccuracyResultOfNothingPasses) {
    RunResults single;
    single.add({one_output(1.0)}, "a");
    const AccuracyResult accuracy = capture([&] { return Comparator::compare_accuracy(single); });
    EXPECT_TRUE(accuracy.pairs.empty());
    EXPECT_TRUE(static_cast<bool>(accuracy));
    EXPECT_EQ(accuracy.percentage(), 1.0);

    AccuracyResult no_iterations;
    no_iterations.pairs.push_back({"a", "b", {}});
    EXPECT_EQ(no_iterations.percentage(), 1.0);
    EXPECT_TRUE(static_cast<bool>(no_iterations));
    EXPECT_THROW(Comparator::compare_accuracy(single, CompareFunc{}), PolygraphyException);
}

TEST_F(ComparatorTest, ValidateReportsNaNAndInf) {
    RunResults clean;
    IterationResult ok;
    ok.outputs.set("y", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    ok.outputs.set("ids", Tensor::from_doubles(DataType::kInt64, {1}, {4}));
    clean.add({ok}, "a");
    EXPECT_TRUE(capture([&] { return Comparator::validate(clean); }));
    EXPECT_THAT(log_, HasSubstr("[I] Output Validation | Runners: ['a']\n"));
    EXPECT_THAT(
        log_,
        HasSubstr(
            "[I]     a                                   | Validating output: y (check_inf=True, check_nan=True)\n"
            "[I]         mean=1.5, std-dev=0.5, var=0.25, median=1.5, min=1 at (0,), max=2 at (1,), avg-magnitude=1.5, "
            "p90=1.9, p95=1.95, p99=1.99\n"
            "[I]         PASSED | Output: y is valid\n"));
    EXPECT_THAT(log_, HasSubstr("[I]     PASSED | Output Validation\n"));

    RunResults bad;
    IterationResult nan_and_inf;
    nan_and_inf.outputs.set("n", Tensor::from_doubles(DataType::kFloat32, {2}, {kNaN, 1}));
    nan_and_inf.outputs.set("i", Tensor::from_doubles(DataType::kFloat64, {2}, {kInf, 1}));
    bad.add({nan_and_inf}, "b");
    EXPECT_FALSE(capture([&] { return Comparator::validate(bad); }));
    EXPECT_THAT(log_, HasSubstr("[E]         NaN Detected | One or more NaNs were encountered in this output\n"));
    EXPECT_THAT(
        log_,
        HasSubstr(
            "[I]         Note: Use -vv or set logging verbosity to EXTRA_VERBOSE to display locations of NaNs\n"));
    EXPECT_THAT(
        log_, HasSubstr("[E]         Inf Detected | One or more non-finite values were encountered in this output\n"));
    EXPECT_THAT(log_, HasSubstr("[E]         FAILED | Errors detected in output: n\n"));
    EXPECT_THAT(log_, HasSubstr("[E]         FAILED | Errors detected in output: i\n"));
    EXPECT_THAT(log_, HasSubstr("[E]     FAILED | Output Validation\n"));

    // Inf is only an error when asked for; NaN only when asked for.
    RunResults inf_only;
    IterationResult infinite;
    infinite.outputs.set("i", Tensor::from_doubles(DataType::kFloat32, {1}, {kInf}));
    inf_only.add({infinite}, "c");
    EXPECT_TRUE(capture([&] { return Comparator::validate(inf_only, false, true); }));
    EXPECT_THAT(log_, HasSubstr("(check_inf=False, check_nan=True)"));
    EXPECT_FALSE(capture([&] { return Comparator::validate(inf_only, true, false); }));
    // A NaN is non-finite too: with the NaN check off, it still fails the Inf check.
    RunResults nan_only;
    IterationResult not_a_number;
    not_a_number.outputs.set("n", Tensor::from_doubles(DataType::kFloat16, {2}, {1, kNaN}));
    nan_only.add({not_a_number}, "d");
    EXPECT_FALSE(capture([&] { return Comparator::validate(nan_only, true, false); }));
    EXPECT_THAT(log_, HasSubstr("Inf Detected"));
    EXPECT_THAT(log_, Not(HasSubstr("NaN Detected")));
    EXPECT_TRUE(capture([&] { return Comparator::validate(nan_only, false, false); }));

    // Details at extra-verbose.
    logger().set_severity(Severity::kExtraVerbose);
    capture([&] { return Comparator::validate(bad); });
    EXPECT_THAT(log_, HasSubstr("[X]         Note: NaNs at:\n            [ True False]\n"));
    EXPECT_THAT(log_, HasSubstr("[X]         Note: non-finite values:\n            [inf]\n"));
}

TEST_F(ComparatorTest, ValidateFailFastStopsAtTheFirstBadOutput) {
    RunResults bad;
    IterationResult result;
    result.outputs.set("first", Tensor::from_doubles(DataType::kFloat32, {1}, {kNaN}));
    result.outputs.set("second", Tensor::from_doubles(DataType::kFloat32, {1}, {kNaN}));
    bad.add({result}, "a");
    EXPECT_FALSE(capture([&] { return Comparator::validate(bad, true, true, true); }));
    EXPECT_THAT(log_, Not(HasSubstr("Validating output: second")));
    EXPECT_THAT(log_, Not(HasSubstr("FAILED | Output Validation")));
}

}  // namespace
}  // namespace polygraphy
