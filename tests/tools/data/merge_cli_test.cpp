// `polygraphy run --shard I/N --save-summary` and `polygraphy data merge` end to end: the merged
// summary of the shards equals the unsharded run's, whatever the order of the parts and however
// often one is given; bad shards, parts and datasets get one line and leave nothing behind.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npz.h"
#include "polygraphy/comparator/dataset_summary.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

constexpr int kSamples = 7;

// A model whose every layer ONNX-Runtime and the built-in runtime compute slightly differently at
// some samples, and a dataset folder of one .npz per sample.
class ShardedRun : public ::testing::Test {
protected:
    void SetUp() override {
        testing::ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{4, 16});
        builder.node("Exp", {"x"}, {"e"}, "exp");
        builder.node("Softmax", {"e"}, {"s"}, "softmax");
        builder.node("Tanh", {"s"}, {"y"}, "tanh");
        builder.output("y", DataType::kFloat32, Shape{4, 16});
        builder.save(model_);
        std::filesystem::create_directories(dataset_);
        logger().set_severity(Severity::kWarning);
        for (int sample = 0; sample < kSamples; ++sample) {
            std::vector<double> values;
            for (int i = 0; i < 64; ++i) values.push_back(std::sin(0.37 * i + 1.3 * sample) * (1 + sample));
            InputList feeds(1);
            feeds[0].set("x", Tensor::from_doubles(DataType::kFloat32, {4, 16}, values));
            npz::save_inputs(feeds, dataset_ + "/sample_" + std::to_string(sample) + ".npz");
        }
        logger().reset();
    }

    // `run` over the dataset with every layer marked, tolerances that some samples fail, and `extra`.
    testing::CommandResult run(const std::vector<std::string>& extra) const {
        std::vector<std::string> args = {"run",    model_,           "--ref", "--onnxrt", "--load-inputs",
                                         dataset_, "--onnx-outputs", "mark",  "all",      "--atol",
                                         "1e-9",   "--rtol",         "0"};
        args.insert(args.end(), extra.begin(), extra.end());
        return run_polygraphy(args);
    }

    // The summary at `path` without the keys that say how it was split.
    static std::string comparable(const std::string& path) {
        DatasetSummary summary = load_dataset_summary(path);
        summary.shard_count = 1;
        summary.shards = {0};
        const std::string copy = path + ".comparable";
        save_dataset_summary(summary, copy);
        return read_file(copy);
    }

    TempDir dir_;
    std::string model_ = dir_.file("model.onnx");
    std::string dataset_ = dir_.file("dataset");
};

TEST_F(ShardedRun, MergedShardsEqualTheUnshardedRunInAnyOrderAndWithRepeats) {
    const auto whole = run({"--save-summary", dir_.file("whole.json")});
    ASSERT_EQ(whole.exit_code, 1) << whole.output;  // 1e-9 is tighter than the runtimes agree
    ASSERT_TRUE(std::filesystem::exists(dir_.file("whole.json"))) << whole.output;
    for (int shard = 0; shard < 3; ++shard) {
        const auto part =
            run({"--shard", std::to_string(shard) + "/3", "--save-summary", dir_.file("part" + std::to_string(shard))});
        ASSERT_TRUE(std::filesystem::exists(dir_.file("part" + std::to_string(shard)))) << part.output;
    }
    const DatasetSummary part1 = load_dataset_summary(dir_.file("part1"));
    EXPECT_EQ(part1.samples, (std::vector<std::size_t>{1, 4}));
    EXPECT_EQ(part1.dataset_samples, std::size_t{kSamples});
    ASSERT_EQ(part1.pairs.size(), 1u);
    EXPECT_EQ(part1.pairs[0].first_runner, "ref-runner-N0");  // no time stamp: the same in every shard
    EXPECT_EQ(part1.pairs[0].outputs.size(), 3u);             // every layer: e, s, y
    ASSERT_TRUE(part1.pairs[0].outputs[0].histograms);

    const std::string expected = comparable(dir_.file("whole.json"));
    int index = 0;
    for (const std::vector<std::string>& order : std::vector<std::vector<std::string>>{
             {"part0", "part1", "part2"}, {"part2", "part0", "part1"}, {"part1", "part2", "part1", "part0", "part2"}}) {
        std::vector<std::string> args = {"data", "merge"};
        for (const auto& name : order) args.push_back(dir_.file(name));
        const std::string merged = dir_.file("merged" + std::to_string(index++) + ".json");
        args.insert(args.end(), {"-o", merged});
        const auto result = run_polygraphy(args);
        EXPECT_EQ(result.exit_code, whole.exit_code) << result.output;
        EXPECT_THAT(result.output, HasSubstr("shards 3 of 3, 7 sample(s)"));
        EXPECT_EQ(comparable(merged), expected) << "order " << index;
        EXPECT_EQ(load_dataset_summary(merged).shards, (std::vector<std::size_t>{0, 1, 2}));
    }

    // The failing samples name where they diverged.
    const DatasetSummary merged = load_dataset_summary(dir_.file("merged0.json"));
    ASSERT_FALSE(merged.pairs[0].first_divergences.empty());
    EXPECT_THAT((std::vector<std::string>{"exp", "softmax", "tanh"}),
                ::testing::Contains(merged.pairs[0].first_divergences[0].node));

    // A merged summary merges again, and makes an HTML report.
    const auto again = run_polygraphy({"data", "merge", dir_.file("merged0.json"), "-o", dir_.file("again.json"),
                                       "--report", dir_.file("merged.html")});
    EXPECT_EQ(again.exit_code, whole.exit_code) << again.output;
    EXPECT_EQ(comparable(dir_.file("again.json")), expected);
    EXPECT_THAT(read_file(dir_.file("merged.html")), HasSubstr("<html"));
}

TEST_F(ShardedRun, TheShardComesFromSlurmOrKubernetes) {
    setenv("SLURM_ARRAY_TASK_ID", "11", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "10", 1);
    setenv("SLURM_ARRAY_TASK_COUNT", "3", 1);
    auto result = run({"--shard", "auto", "--save-summary", dir_.file("slurm.json")});
    unsetenv("SLURM_ARRAY_TASK_ID");
    unsetenv("SLURM_ARRAY_TASK_MIN");
    unsetenv("SLURM_ARRAY_TASK_COUNT");
    ASSERT_TRUE(std::filesystem::exists(dir_.file("slurm.json"))) << result.output;
    DatasetSummary summary = load_dataset_summary(dir_.file("slurm.json"));
    EXPECT_EQ(summary.shards, (std::vector<std::size_t>{1}));
    EXPECT_EQ(summary.shard_count, 3u);

    setenv("JOB_COMPLETION_INDEX", "2", 1);
    setenv("JOB_COMPLETIONS", "4", 1);
    result = run({"--shard", "auto", "--save-summary", dir_.file("k8s.json")});
    unsetenv("JOB_COMPLETION_INDEX");
    unsetenv("JOB_COMPLETIONS");
    ASSERT_TRUE(std::filesystem::exists(dir_.file("k8s.json"))) << result.output;
    summary = load_dataset_summary(dir_.file("k8s.json"));
    EXPECT_EQ(summary.shards, (std::vector<std::size_t>{2}));
    EXPECT_EQ(summary.samples, (std::vector<std::size_t>{2, 6}));
}

TEST_F(ShardedRun, BadShardsPartsAndDatasetsGetOneLineAndLeaveNothingBehind) {
    auto expect_refused = [&](const testing::CommandResult& result, const std::string& message) {
        EXPECT_NE(result.exit_code, 0) << result.output;
        EXPECT_THAT(result.output, HasSubstr(message));
        EXPECT_THAT(result.output, Not(HasSubstr("Unexpected error")));
        EXPECT_THAT(result.output, Not(HasSubstr("Traceback")));
    };
    const std::string out = dir_.file("out.json");
    expect_refused(run({"--shard", "3/3", "--save-summary", out}), "shard 3 of 3 is out of range");
    expect_refused(run({"--shard=-1/3", "--save-summary", out}), "out of range");
    expect_refused(run({"--shard", "1/0", "--save-summary", out}), "a shard count of at least 1");
    expect_refused(run({"--shard", "one/3", "--save-summary", out}), "Expected INDEX/COUNT");
    expect_refused(run({"--shard", "auto", "--save-summary", out}), "neither a Slurm job array task");
    expect_refused(run_polygraphy({"run", model_, "--ref", "--save-summary", out}),
                   "--save-summary needs a comparison");
    expect_refused(run({"--save-summary", dir_.file("dataset/sample_0.npz/x.json")}), "--save-summary");
    EXPECT_FALSE(std::filesystem::exists(out));

    // A dataset folder with a file of no known layout.
    std::ofstream(dataset_ + "/notes.txt") << "not a sample";
    expect_refused(run({"--save-summary", out}), "notes.txt matches no dataset layout");
    std::filesystem::remove(dataset_ + "/notes.txt");
    EXPECT_FALSE(std::filesystem::exists(out));

    // A run that compared (passed or not) and saved its summary.
    auto summarize = [&](const std::vector<std::string>& extra, const std::string& path) {
        std::vector<std::string> args = extra;
        args.insert(args.end(), {"--save-summary", path});
        const auto result = run(args);
        ASSERT_TRUE(std::filesystem::exists(path)) << result.output;
    };
    summarize({"--shard", "0/2"}, dir_.file("a0.json"));
    summarize({"--shard", "1/2"}, dir_.file("a1.json"));
    // Parts of other runs: other tolerances, another shard count.
    summarize({"--shard", "1/2", "--atol", "1"}, dir_.file("b1.json"));
    summarize({"--shard", "1/3"}, dir_.file("c1.json"));
    const std::string merged = dir_.file("merged.json");
    expect_refused(run_polygraphy({"data", "merge", dir_.file("a0.json"), dir_.file("b1.json"), "-o", merged}),
                   "are parts of different runs: their options differ");
    expect_refused(run_polygraphy({"data", "merge", dir_.file("a0.json"), dir_.file("c1.json"), "-o", merged}),
                   "their shard counts (2 and 3) differ");
    expect_refused(run_polygraphy({"data", "merge", dir_.file("a0.json"), "-o", merged}),
                   "Missing shard 1 of 2: no part holds it");

    // Another dataset: one sample fewer.
    std::filesystem::remove(dataset_ + "/sample_6.npz");
    summarize({"--shard", "1/2"}, dir_.file("d1.json"));
    expect_refused(run_polygraphy({"data", "merge", dir_.file("a0.json"), dir_.file("d1.json"), "-o", merged}),
                   "their datasets differ");

    // Truncated, corrupt and foreign parts.
    const std::string text = read_file(dir_.file("a1.json"));
    write_file_atomically(dir_.file("truncated.json"), text.substr(0, text.size() / 2));
    expect_refused(run_polygraphy({"data", "merge", dir_.file("a0.json"), dir_.file("truncated.json"), "-o", merged}),
                   "truncated.json: ");
    std::string corrupt = text;
    corrupt.replace(corrupt.find("\"failed\": "), 11, "\"failed\": 9");
    write_file_atomically(dir_.file("corrupt.json"), corrupt);
    expect_refused(run_polygraphy({"data", "merge", dir_.file("a0.json"), dir_.file("corrupt.json"), "-o", merged}),
                   "do not match its samples");
    write_file_atomically(dir_.file("foreign.json"), "{\"lst\": []}");
    expect_refused(run_polygraphy({"data", "merge", dir_.file("foreign.json"), "-o", merged}), "foreign.json: ");
    expect_refused(run_polygraphy({"data", "merge", dir_.file("absent.json"), "-o", merged}), "absent.json");
    EXPECT_FALSE(std::filesystem::exists(merged));
}

}  // namespace
}  // namespace polygraphy::tools
