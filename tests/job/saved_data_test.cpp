// Saved inputs and results read by path (job/saved_data.h): the format picked for each path, and
// data to-input's merge over every format.
#include "polygraphy/job/saved_data.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/test_data.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npy.h"
#include "polygraphy/common/npz.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;

Tensor floats(Shape shape, std::vector<double> values) {
    return Tensor::from_doubles(DataType::kFloat32, std::move(shape), values);
}

// ---- the format of a path ------------------------------------------------------------------------

class SavedData : public ::testing::Test {
protected:
    void SetUp() override { logger().set_severity(Severity::kWarning); }
    void TearDown() override { logger().reset(); }
    testing::TempDir dir_;
};

TEST_F(SavedData, EachPathGoesToTheReaderOfItsFormat) {
    InputList inputs(1);
    inputs[0].set("x", floats({2}, {1, 2}));
    save_inputs(inputs, dir_.file("in.json"));
    save_test_data(dir_.file("case"), inputs, {});
    std::filesystem::create_directories(dir_.file("empty"));

    EXPECT_EQ(saved_data_format(dir_.file("in.json")), SavedDataFormat::kJson);
    EXPECT_EQ(saved_data_format(dir_.file("case")), SavedDataFormat::kOnnxTestData);
    EXPECT_EQ(saved_data_format(dir_.file("case/test_data_set_0")), SavedDataFormat::kOnnxTestData);
    // Any other folder is a dataset; a missing path goes to the JSON reader, which names it.
    EXPECT_EQ(saved_data_format(dir_.file("empty")), SavedDataFormat::kDatasetFolder);
    EXPECT_THAT(testing::error_message<FormatError>([&] { load_saved_inputs(dir_.file("empty")); }),
                HasSubstr("the dataset folder is empty"));
    EXPECT_EQ(saved_data_format(dir_.file("missing")), SavedDataFormat::kJson);
    EXPECT_THAT(testing::error_message<PolygraphyException>([&] { load_saved_inputs(dir_.file("missing")); }),
                HasSubstr("missing"));

    for (const std::string& path : {dir_.file("in.json"), dir_.file("case")}) {
        const InputList loaded = load_saved_inputs(path);
        ASSERT_EQ(loaded.size(), 1u) << path;
        EXPECT_TRUE(loaded[0].at("x").equals(inputs[0].at("x"))) << path;
        EXPECT_TRUE(std::holds_alternative<InputList>(load_saved_results_or_inputs(path))) << path;
    }
}

TEST_F(SavedData, ResultsComeFromJsonFilesAndTestDataFolders) {
    RunResults results;
    IterationResult iteration;
    iteration.outputs.set("y", floats({1}, {7}));
    results.add({iteration}, "runner");
    results.save(dir_.file("out.json"));
    save_test_data(dir_.file("golden"), {}, {iteration.outputs});

    EXPECT_EQ(load_saved_results(dir_.file("out.json")).lst[0].first, "runner");
    const RunResults from_folder = load_saved_results(dir_.file("golden"));
    ASSERT_EQ(from_folder.size(), 1u);
    EXPECT_EQ(from_folder.lst[0].first, "golden");  // named after the folder
    EXPECT_TRUE(from_folder.lst[0].second[0].outputs.at("y").equals(iteration.outputs.at("y")));
    EXPECT_TRUE(std::holds_alternative<RunResults>(load_saved_results_or_inputs(dir_.file("golden"))));
}

TEST_F(SavedData, ADatasetFolderIsReadInNaturalOrderOfItsFiles) {
    testing::save_identity_model(dir_.file("model.onnx"), {2});
    const std::string folder = dir_.file("dataset");
    std::filesystem::create_directories(folder);
    auto feed_of = [](double value) {
        InputList feeds(1);
        feeds[0].set("x", floats({2}, {value, value}));
        return feeds;
    };
    npz::save_inputs(feed_of(2), folder + "/sample_2.npz");
    npz::save_inputs(feed_of(10), folder + "/sample_10.npz");
    save_inputs(feed_of(1), folder + "/sample_1.json");
    save_test_data(folder + "/sample_3", feed_of(3), {});
    npy::save_file(floats({2}, {11, 11}), folder + "/sample_11.npy");  // one tensor: the model's only input
    std::ofstream(folder + "/.hidden") << "skipped";
    const InputList loaded = load_saved_inputs(folder, dir_.file("model.onnx"));
    std::vector<double> order;
    for (const TensorMap& feed : loaded) order.push_back(feed.at("x").value_as_double(0));
    EXPECT_EQ(order, (std::vector<double>{1, 2, 3, 10, 11}));
    // Without the model, a .npy file names no input.
    EXPECT_THAT(testing::error_message<FormatError>([&] { load_saved_inputs(folder); }),
                HasSubstr("sample_11.npy holds one tensor, which can only be the input of a model with one input"));
    std::ofstream(folder + "/readme.md") << "x";
    EXPECT_THAT(testing::error_message<FormatError>([&] { load_saved_inputs(folder, dir_.file("model.onnx")); }),
                HasSubstr("readme.md matches no dataset layout"));
    EXPECT_THROW(load_saved_results(folder), FormatError);
}

// ---- merge_into_inputs --------------------------------------------------------------------------

using MergeInputs = SavedData;

TEST_F(MergeInputs, InputsAndOutputsAreMergedPerIteration) {
    InputList inputs(2);
    inputs[0].set("x", floats({1}, {1}));
    inputs[1].set("x", floats({1}, {2}));
    save_inputs(inputs, dir_.file("in.json"));
    RunResults results;
    IterationResult first, second;
    first.outputs.set("y", floats({1}, {10}));
    first.outputs.set("x", floats({1}, {-1}));  // replaces the input of the same name
    second.outputs.set("y", floats({1}, {20}));
    results.add({first, second}, "runner");
    results.save(dir_.file("out.json"));

    const InputList merged = merge_into_inputs({dir_.file("in.json"), dir_.file("out.json")});
    ASSERT_EQ(merged.size(), 2u);
    EXPECT_EQ(merged[0].keys(), (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(merged[0].at("x").value_as_double(0), -1);
    EXPECT_EQ(merged[0].at("y").value_as_double(0), 10);
    // Each iteration keeps its own values (Polygraphy's padding would share one dict).
    EXPECT_EQ(merged[1].at("x").value_as_double(0), 2);
    EXPECT_EQ(merged[1].at("y").value_as_double(0), 20);
}

TEST_F(MergeInputs, DifferentIterationCountsWarn) {
    InputList one(1), two(2);
    one[0].set("a", floats({1}, {1}));
    two[0].set("b", floats({1}, {2}));
    two[1].set("b", floats({1}, {3}));
    save_inputs(one, dir_.file("one.json"));
    save_inputs(two, dir_.file("two.json"));
    InputList merged;
    const std::string log = testing::captured_stdout([&] {
        merged = merge_into_inputs({dir_.file("one.json"), dir_.file("two.json")});
    });
    EXPECT_THAT(log, HasSubstr("[W] The provided files have different numbers of iterations."));
    ASSERT_EQ(merged.size(), 2u);
    EXPECT_EQ(merged[0].keys(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(merged[1].keys(), (std::vector<std::string>{"b"}));
}

TEST_F(MergeInputs, BadFilesNameTheFile) {
    std::ofstream(dir_.file("bad.json")) << "{not json";
    EXPECT_THAT(testing::error_message<PolygraphyException>([&] { merge_into_inputs({dir_.file("bad.json")}); }),
                HasSubstr("bad.json"));
    EXPECT_THAT(testing::error_message<PolygraphyException>([&] { merge_into_inputs({dir_.file("missing.json")}); }),
                HasSubstr("missing.json"));
}

TEST_F(MergeInputs, TestDataFoldersMergeLikeFiles) {
    InputList inputs(1);
    inputs[0].set("x", floats({1}, {1}));
    save_inputs(inputs, dir_.file("in.json"));
    TensorMap outputs;
    outputs.set("y", floats({1}, {5}));
    save_test_data(dir_.file("case"), {}, {outputs});

    const InputList merged = merge_into_inputs({dir_.file("in.json"), dir_.file("case")});
    ASSERT_EQ(merged.size(), 1u);
    EXPECT_EQ(merged[0].keys(), (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(merged[0].at("y").value_as_double(0), 5);
}

}  // namespace
}  // namespace polygraphy
