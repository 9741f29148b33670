// The per-output summary of a comparison over many samples (comparator/dataset_summary.h).
#include "polygraphy/comparator/dataset_summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "diff_models.h"
#include "model_builder.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;

OutputCompareResult figures(bool passed, double max_abs, double max_rel) {
    OutputCompareResult result;
    result.passed = passed;
    result.max_absdiff = max_abs;
    result.max_reldiff = max_rel;
    return result;
}

AccuracyResult::PairResult five_samples() {
    AccuracyResult::PairResult pair;
    pair.first_runner = "ref-runner";
    pair.second_runner = "onnxrt-runner";
    const double abs_diffs[] = {1e-6, 4e-6, 2e-6, 3e-4, 5e-6};
    for (int sample = 0; sample < 5; ++sample) {
        IterationCompareResult iteration;
        iteration.set("logits", figures(sample != 3, abs_diffs[sample], 10 * abs_diffs[sample]));
        iteration.set("hidden", figures(true, 1e-7 * (sample + 1), 1e-6));
        pair.iterations.push_back(iteration);
    }
    return pair;
}

TEST(DatasetSummary, CountsSamplesAndGivesQuantilesAndTheWorstSample) {
    const auto outputs = summarize_dataset(five_samples());
    ASSERT_EQ(outputs.size(), 2u);
    const OutputDatasetSummary& logits = outputs[0];
    EXPECT_EQ(logits.output, "logits");
    EXPECT_EQ(logits.samples, 5u);
    EXPECT_EQ(logits.passed, 4u);
    EXPECT_EQ(logits.failed, 1u);
    EXPECT_DOUBLE_EQ(logits.max_abs.min, 1e-6);
    EXPECT_DOUBLE_EQ(logits.max_abs.median, 4e-6);                     // sorted: 1, 2, 4, 5, 300 (e-6)
    EXPECT_DOUBLE_EQ(logits.max_abs.p90, 5e-6 + 0.6 * (3e-4 - 5e-6));  // numpy's linear quantile
    EXPECT_DOUBLE_EQ(logits.max_abs.max, 3e-4);
    EXPECT_DOUBLE_EQ(logits.max_rel.max, 3e-3);
    EXPECT_EQ(logits.worst_sample, 3u);
    // All passing: the worst is the largest difference.
    EXPECT_EQ(outputs[1].failed, 0u);
    EXPECT_EQ(outputs[1].worst_sample, 4u);
}

TEST(DatasetSummary, AFailingSampleIsWorseThanALargerPassingOneAndErrorsCountAsFailures) {
    AccuracyResult::PairResult pair;
    IterationCompareResult big_but_passing, failing, broken;
    big_but_passing.set("y", figures(true, 1.0, 0.1));
    failing.set("y", figures(false, 0.5, 0.1));
    OutputCompareResult error = figures(false, 0, 0);
    error.error = "shape mismatch";
    broken.set("y", error);
    pair.iterations = {big_but_passing, failing, broken};
    const auto outputs = summarize_dataset(pair);
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0].failed, 2u);
    EXPECT_EQ(outputs[0].worst_sample, 2u);  // could not be compared at all
    EXPECT_TRUE(std::isnan(outputs[0].max_abs.max));
    pair.iterations.pop_back();
    EXPECT_EQ(summarize_dataset(pair)[0].worst_sample, 1u);
    // Every sample failing: the largest difference, however small the differences are.
    AccuracyResult::PairResult failing_all;
    for (double difference : {3.3e-4, 4.5e-4, 4.0e-4}) {
        IterationCompareResult iteration;
        iteration.set("y", figures(false, difference, 1.0));
        failing_all.iterations.push_back(iteration);
    }
    EXPECT_EQ(summarize_dataset(failing_all)[0].worst_sample, 1u);
}

TEST(DatasetSummary, TheTableNamesTheRunnersAndEveryOutput) {
    const AccuracyResult::PairResult pair = five_samples();
    const std::string text = format_dataset_summary(pair, summarize_dataset(pair));
    EXPECT_THAT(text, HasSubstr("Dataset Summary | ref-runner vs. onnxrt-runner | 5 samples"));
    EXPECT_THAT(text, HasSubstr("    Output | Passed | Failed | Max abs diff per sample: min / median / p90 / max"));
    EXPECT_THAT(text,
                HasSubstr("    logits |      4 |      1 | 1e-06 / 4e-06 / 0.000182 / 0.0003 | 4e-05 / 0.003 | 3"));
    EXPECT_THAT(text, HasSubstr("    hidden |      5 |      0 |"));
}

// `run` with several iterations prints it after the accuracy summary, and `--report` saves it; one
// iteration prints nothing more than Polygraphy does.
TEST(DatasetSummary, RunPrintsItForSeveralSamplesAndTheReportHoldsIt) {
    testing::TempDir dir;
    testing::save_identity_model(dir.file("identity.onnx"), {2, 3});
    auto result = testing::run_polygraphy({"run", dir.file("identity.onnx"), "--ref", "--onnxrt", "--iterations", "3",
                                           "--report", dir.file("report.json")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    const std::size_t accuracy = result.output.find("Passed: 3/3 iterations");
    const std::size_t dataset = result.output.find("[I] Dataset Summary | ref-runner");
    ASSERT_NE(dataset, std::string::npos) << result.output;
    EXPECT_LT(accuracy, dataset);
    EXPECT_THAT(result.output.substr(dataset), HasSubstr(" | 3 samples\n"));
    EXPECT_THAT(result.output, HasSubstr("    y      |      3 |      0 | 0 / 0 / 0 / 0 | 0 / 0 | 0"));
    const std::string report = read_file(dir.file("report.json"));
    EXPECT_THAT(report, HasSubstr("\"dataset\": {"));
    EXPECT_THAT(report, HasSubstr("\"samples\": 3"));
    result = testing::run_polygraphy({"run", dir.file("identity.onnx"), "--ref", "--onnxrt"});
    EXPECT_THAT(result.output, ::testing::Not(HasSubstr("Dataset Summary")));
}

TEST(SuggestTolerances, RoundsTheWorstSampleUpToTwoDigits) {
    const auto tolerances = suggest_tolerances(five_samples());
    ASSERT_EQ(tolerances.size(), 2u);
    EXPECT_EQ(tolerances[0].output, "logits");
    EXPECT_DOUBLE_EQ(tolerances[0].atol, 3e-4);  // already two digits
    EXPECT_GE(tolerances[0].rtol, 3e-3);
    EXPECT_LT(tolerances[0].rtol, 3.1e-3);
    EXPECT_GE(tolerances[1].atol, 5e-7);
    EXPECT_LT(tolerances[1].atol, 5.1e-7);
    const std::string text = format_suggested_tolerances(five_samples(), tolerances);
    EXPECT_THAT(text, HasSubstr("Suggested Tolerances | ref-runner vs. onnxrt-runner | every element of 5 sample(s)"));
    EXPECT_THAT(text, HasSubstr("\n    --atol logits:0.0003 hidden:5e-07 --rtol 0\n    --atol 0 --rtol logits:0.003 "
                                "hidden:1e-06"));
}

// The suggestion of `run --suggest-tolerances` passes the samples it came from, and half of it fails.
TEST(SuggestTolerances, TheSuggestionPassesItsSamplesAndHalfOfItFails) {
    testing::TempDir dir;
    const onnx::ModelProto model = testing::diff_cnn();
    save_onnx(model, dir.file("model.onnx"));
    save_onnx(testing::fp16_version(model), dir.file("fp16.onnx"));
    ASSERT_EQ(testing::run_polygraphy({"run", dir.file("model.onnx"), "--ref", "--iterations", "3", "--save-outputs",
                                       dir.file("reference.json")})
                  .exit_code,
              0);
    auto run_fp16 = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = {
            "run", dir.file("fp16.onnx"), "--ref", "--iterations", "3", "--load-outputs", dir.file("reference.json")};
        args.insert(args.end(), extra.begin(), extra.end());
        return testing::run_polygraphy(args);
    };
    const auto suggested = run_fp16({"--suggest-tolerances"});
    EXPECT_EQ(suggested.exit_code, 1);  // fp16 misses the default 1e-5
    // "    --atol y:<A> --rtol 0" and "    --atol 0 --rtol y:<R>"
    auto value_after = [&](const std::string& marker) {
        const std::size_t at = suggested.output.find(marker);
        if (at == std::string::npos) return -1.0;
        return std::stod(suggested.output.substr(at + marker.size()));
    };
    const double atol = value_after("    --atol y:"), rtol = value_after("--atol 0 --rtol y:");
    ASSERT_GT(atol, 0) << suggested.output;
    ASSERT_GT(rtol, 0) << suggested.output;
    auto text = [](double value) {
        std::ostringstream out;
        out.precision(17);
        out << value;
        return out.str();
    };
    EXPECT_EQ(run_fp16({"--atol", "y:" + text(atol), "--rtol", "0"}).exit_code, 0);
    EXPECT_EQ(run_fp16({"--atol", "y:" + text(atol / 2), "--rtol", "0"}).exit_code, 1);
    EXPECT_EQ(run_fp16({"--atol", "0", "--rtol", "y:" + text(rtol)}).exit_code, 0);
    EXPECT_EQ(run_fp16({"--atol", "0", "--rtol", "y:" + text(rtol / 2)}).exit_code, 1);

    // At an element pass rate of 0.5: the tolerance that half of each sample's elements pass, checked on
    // the median; smaller than the one every element passes.
    const auto half = run_fp16({"--suggest-tolerances", "0.5"});
    EXPECT_THAT(half.output, HasSubstr("at least 50% of the elements of each of 3 sample(s) pass with either"));
    const std::size_t at = half.output.find("    --atol y:");
    ASSERT_NE(at, std::string::npos) << half.output;
    const double median_atol = std::stod(half.output.substr(at + 13));
    EXPECT_LT(median_atol, atol);
    EXPECT_THAT(half.output, HasSubstr(" --rtol 0 --check-error-stat quantile --error-quantile 0.5"));
    const std::vector<std::string> quantile_check = {
        "--check-error-stat", "quantile", "--error-quantile", "0.5", "--rtol", "0", "--atol"};
    auto with_atol = [&](double value) {
        std::vector<std::string> args = quantile_check;
        args.push_back("y:" + text(value));
        return args;
    };
    EXPECT_EQ(run_fp16(with_atol(median_atol)).exit_code, 0);
    EXPECT_EQ(run_fp16(with_atol(median_atol / 2)).exit_code, 1);
    // Bad rates, and a pass rate beside an error quantile of its own: one line.
    for (const char* bad : {"0", "1.5", "x"})
        EXPECT_THAT(run_fp16({"--suggest-tolerances", bad}).output,
                    HasSubstr("[!] --suggest-tolerances: expected an element pass rate in (0, 1]"));
    EXPECT_THAT(run_fp16({"--suggest-tolerances", "0.9", "--error-quantile", "0.5"}).output,
                HasSubstr("[!] --suggest-tolerances 0.9 sets the error quantile to the pass rate"));
}

}  // namespace
}  // namespace polygraphy

namespace polygraphy {
namespace {

// Ten samples of two outputs with histograms; sample i's figures depend on i only.
AccuracyResult::PairResult ten_samples_with_histograms() {
    AccuracyResult::PairResult pair;
    pair.first_runner = "a";
    pair.second_runner = "b";
    for (int sample = 0; sample < 10; ++sample) {
        IterationCompareResult iteration;
        for (const char* name : {"logits", "hidden"}) {
            OutputCompareResult result =
                figures(sample % 4 != 1, 1e-7 * (sample + 1) * (name[0] == 'l' ? 3 : 1), 1e-5 / (sample + 1));
            result.mean_absdiff = result.max_absdiff / 3;
            result.mean_reldiff = result.max_reldiff / 7;
            const Tensor errors = Tensor::from_doubles(DataType::kFloat32, {4}, {0, 1e-13, 3e-6 * sample, 2e5});
            result.error_histograms = ErrorHistograms{decade_histogram(errors), decade_histogram(errors)};
            iteration.set(name, result);
        }
        pair.iterations.push_back(iteration);
    }
    return pair;
}

// The summary of shard `index` of `count` of ten_samples_with_histograms(), as a shard's run saves it.
DatasetSummary shard_summary(std::size_t index, std::size_t count) {
    const AccuracyResult::PairResult whole = ten_samples_with_histograms();
    AccuracyResult::PairResult part = whole;
    part.iterations.clear();
    for (std::size_t sample = index; sample < whole.iterations.size(); sample += count)
        part.iterations.push_back(whole.iterations[sample]);
    DatasetSummary summary;
    summary.model_fingerprint = "m";
    summary.dataset_fingerprint = "d";
    summary.options_fingerprint = "o";
    summary.dataset_samples = whole.iterations.size();
    summary.shard_count = count;
    summary.shards = {index};
    summary.samples = shard_samples(index, count, whole.iterations.size());
    summary.pairs.push_back(PairDatasetSummary{"a", "b", summarize_dataset(part, SampleIndexing{index, count}), {}});
    summary.pairs[0].first_divergences.push_back(SampleDivergence{summary.samples[0], "node", "Relu", "t", 1.0});
    return summary;
}

std::string text_of(DatasetSummary summary, const testing::TempDir& dir) {
    summary.shard_count = 1;
    summary.shards = {0};
    save_dataset_summary(summary, dir.file("text.json"));
    return read_file(dir.file("text.json"));
}

TEST(DatasetSummaryMerge, ShardsInAnyOrderAndRepeatedGiveTheWholeSummaryExactly) {
    testing::TempDir dir;
    const DatasetSummary whole = shard_summary(0, 1);
    EXPECT_EQ(whole.pairs[0].outputs[0].histograms->absolute.counts[0], 10);     // 1e-13 is below the first edge
    EXPECT_EQ(whole.pairs[0].outputs[0].histograms->absolute.non_positive, 11);  // every 0, and 3e-6 * 0
    // Every sample's first divergence, from the shards; the whole run found only sample 0's here.
    DatasetSummary expected = whole;
    expected.pairs[0].first_divergences.clear();
    for (std::size_t shard = 0; shard < 3; ++shard)
        expected.pairs[0].first_divergences.push_back(SampleDivergence{shard, "node", "Relu", "t", 1.0});

    std::vector<std::pair<std::string, DatasetSummary>> parts;
    for (std::size_t shard = 0; shard < 3; ++shard) {
        const std::string path = dir.file("part" + std::to_string(shard) + ".json");
        save_dataset_summary(shard_summary(shard, 3), path);
        parts.emplace_back(path, load_dataset_summary(path));  // through the file, as `data merge` reads it
    }
    for (const auto& order : std::vector<std::vector<int>>{{0, 1, 2}, {2, 1, 0}, {1, 0, 2, 1, 1}, {2, 2, 0, 1, 0}}) {
        std::vector<std::pair<std::string, DatasetSummary>> given;
        for (int index : order) given.push_back(parts[static_cast<std::size_t>(index)]);
        const DatasetSummary merged = merge_dataset_summaries(given);
        EXPECT_EQ(merged.shards, (std::vector<std::size_t>{0, 1, 2}));
        EXPECT_EQ(text_of(merged, dir), text_of(expected, dir));
        const OutputDatasetSummary& logits = merged.pairs[0].outputs[0];
        EXPECT_EQ(logits.output, "logits");
        EXPECT_EQ(logits.failed, 3u);  // samples 1, 5, 9
        EXPECT_EQ(logits.worst_sample, 9u);
        EXPECT_EQ(logits.sum_max_abs, whole.pairs[0].outputs[0].sum_max_abs);  // exact: added in sample order
        EXPECT_EQ(logits.histograms->absolute.infinite + logits.histograms->absolute.counts.back(), 10);
    }
    // A merged summary merges with nothing else, and again with itself.
    const DatasetSummary merged = merge_dataset_summaries(parts);
    EXPECT_EQ(text_of(merge_dataset_summaries({{"m1", merged}, {"m2", merged}}), dir), text_of(expected, dir));
}

TEST(DatasetSummaryMerge, RefusesPartsOfOtherRunsOverlapsAndMissingShards) {
    auto refusal = [](const std::vector<std::pair<std::string, DatasetSummary>>& parts) {
        try {
            merge_dataset_summaries(parts);
        } catch (const PolygraphyException& error) {
            return std::string(error.what());
        }
        return std::string("merged");
    };
    const DatasetSummary zero = shard_summary(0, 3), one = shard_summary(1, 3), two = shard_summary(2, 3);
    EXPECT_THAT(refusal({{"p0", zero}, {"p2", two}}), HasSubstr("Missing shard 1 of 3: no part holds it"));
    EXPECT_THAT(refusal({{"p0", zero}}), HasSubstr("Missing shards 1, 2 of 3"));
    for (const auto& [field, what] : std::vector<std::pair<std::string DatasetSummary::*, std::string>>{
             {&DatasetSummary::model_fingerprint, "models"},
             {&DatasetSummary::dataset_fingerprint, "datasets"},
             {&DatasetSummary::options_fingerprint, "options"}}) {
        DatasetSummary other = one;
        other.*field = "other";
        EXPECT_THAT(refusal({{"p0", zero}, {"p1", other}, {"p2", two}}),
                    HasSubstr("p0 and p1 are parts of different runs: their " + what + " differ"));
    }
    DatasetSummary renamed = one;
    renamed.pairs[0].second_runner = "c";
    EXPECT_THAT(refusal({{"p0", zero}, {"p1", renamed}, {"p2", two}}), HasSubstr("their runners differ"));
    const DatasetSummary zero_one = merge_dataset_summaries({{"p0", zero}, {"p1", one}, {"p2", two}});
    DatasetSummary first_two = zero_one;
    first_two.shards = {0, 1};
    EXPECT_THAT(refusal({{"p01", first_two}, {"p1", one}, {"p2", two}}),
                HasSubstr("both hold shard 1 but not the same shards"));
    EXPECT_THAT(refusal({}), HasSubstr("No summaries to merge"));
}

TEST(DatasetSummaryFile, DamagedFilesAreFormatErrorsNamingThem) {
    testing::TempDir dir;
    const std::string path = dir.file("part.json");
    save_dataset_summary(shard_summary(1, 3), path);
    const std::string text = read_file(path);
    auto refusal = [&](const std::string& contents) {
        write_file_atomically(dir.file("bad.json"), contents);
        try {
            load_dataset_summary(dir.file("bad.json"));
        } catch (const FormatError& error) {
            return std::string(error.what());
        }
        return std::string("loaded");
    };
    EXPECT_THAT(refusal(text.substr(0, text.size() - 40)), HasSubstr("bad.json: "));
    EXPECT_THAT(refusal("[]"), HasSubstr("bad.json: "));
    auto changed = [&](const std::string& from, const std::string& to) {
        std::string copy = text;
        const std::size_t at = copy.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        return at == std::string::npos ? copy : copy.replace(at, from.size(), to);
    };
    EXPECT_THAT(refusal(changed("\"samples\": [\n        1,", "\"samples\": [\n        2,")),
                HasSubstr("its samples are not those of its shards"));
    EXPECT_THAT(refusal(changed("\"shard_count\": 3", "\"shard_count\": 1")),
                HasSubstr("shard 1 is out of range for 1 shards"));
    EXPECT_THAT(refusal(changed("\"format_version\": 1", "\"format_version\": 7")),
                HasSubstr("a summary format this build does not read"));
    EXPECT_THAT(refusal(changed("\"failed\": 1", "\"failed\": 0")), HasSubstr("do not match its samples"));
    EXPECT_THAT(refusal(changed("\"runners\": [", "\"runner\": [")), HasSubstr("unexpected key \"runner\""));
    EXPECT_EQ(refusal(text), "loaded");
}

}  // namespace
}  // namespace polygraphy
