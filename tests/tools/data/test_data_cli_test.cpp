// ONNX test-data folders on the command line: `run --load-inputs DIR --load-outputs DIR` and
// `data convert`.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/onnx/test_data.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;
namespace fs = std::filesystem;

class TestDataCli : public ::testing::Test {
protected:
    void SetUp() override {
        testing::ModelBuilder builder;
        builder.input("x", DataType::kFloat32, Shape{2, 3});
        builder.node("Relu", {"x"}, {"y"});
        builder.output("y", DataType::kFloat32, Shape{2, 3});
        builder.save(model_ = dir_.file("relu.onnx"));
        // Two data sets whose outputs are Relu of the inputs.
        InputList inputs(2);
        std::vector<TensorMap> outputs(2);
        for (int i = 0; i < 2; ++i) {
            inputs[i].set("x", Tensor::from_doubles(DataType::kFloat32, {2, 3}, {-1, 2, -3, 4, -5, 6.0 + i}));
            outputs[i].set("y", Tensor::from_doubles(DataType::kFloat32, {2, 3}, {0, 2, 0, 4, 0, 6.0 + i}));
        }
        logger().set_severity(Severity::kSilent);
        save_test_data(dir_.file("case"), inputs, outputs);
        logger().set_severity(Severity::kInfo);
    }

    TempDir dir_;
    std::string model_;
};

TEST_F(TestDataCli, RunComparesAgainstATestDataFolder) {
    auto result = run_polygraphy(
        {"run", model_, "--ref", "--load-inputs", dir_.file("case"), "--load-outputs", dir_.file("case")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Loading input data from " + dir_.file("case")));
    EXPECT_THAT(result.output, HasSubstr("vs. case | Passed: 2/2 iterations"));

    // One data set, with a wrong expected value: the comparison fails.
    InputList inputs(1);
    inputs[0].set("x", Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1, 1, 1, 1, 1, 1}));
    std::vector<TensorMap> outputs(1);
    outputs[0].set("y", Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1, 1, 1, 1, 1, 2}));
    logger().set_severity(Severity::kSilent);
    save_test_data(dir_.file("wrong"), inputs, outputs);
    logger().set_severity(Severity::kInfo);
    result = run_polygraphy({"run", model_, "--ref", "--load-inputs", dir_.file("wrong/test_data_set_0"),
                             "--load-outputs", dir_.file("wrong/test_data_set_0")});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("FAILED | Output: 'y'"));

    // A folder that is not test data: one line.
    fs::create_directories(dir_.file("empty"));
    result = run_polygraphy({"run", model_, "--ref", "--load-inputs", dir_.file("empty")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] "));
}

// The pytorch-operator cases of the ONNX test suite hold unnamed TensorProtos: with the model on the
// command line they pair with its inputs and outputs by position (issue 40, item 6); without it, one line.
TEST_F(TestDataCli, UnnamedTestDataPairsWithTheModelByPosition) {
    fs::create_directories(dir_.file("unnamed/test_data_set_0"));
    const Tensor x = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {-1, 2, -3, 4, -5, 6});
    const Tensor y = Tensor::from_doubles(DataType::kFloat32, {2, 3}, {0, 2, 0, 4, 0, 6});
    std::ofstream(dir_.file("unnamed/test_data_set_0/input_0.pb"), std::ios::binary)
        << tensor_to_proto(x, "").SerializeAsString();
    std::ofstream(dir_.file("unnamed/test_data_set_0/output_0.pb"), std::ios::binary)
        << tensor_to_proto(y, "").SerializeAsString();
    auto result = run_polygraphy(
        {"run", model_, "--ref", "--load-inputs", dir_.file("unnamed"), "--load-outputs", dir_.file("unnamed")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Passed: 1/1 iterations"));
    // A wrong expected value still fails: the pairing is real.
    std::ofstream(dir_.file("unnamed/test_data_set_0/output_0.pb"), std::ios::binary)
        << tensor_to_proto(x, "").SerializeAsString();
    result = run_polygraphy(
        {"run", model_, "--ref", "--load-inputs", dir_.file("unnamed"), "--load-outputs", dir_.file("unnamed")});
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("FAILED | Output: 'y'"));
    // Without a model there is nothing to pair with.
    result = run_polygraphy({"inspect", "data", dir_.file("unnamed")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("input_0.pb holds an unnamed value; without the model, test data needs named "
                                         "tensors"));
}

TEST_F(TestDataCli, ConvertRoundTripsThroughJson) {
    auto result =
        run_polygraphy({"data", "convert", "--load-inputs", dir_.file("case"), "--load-outputs", dir_.file("case"),
                        "--save-inputs", dir_.file("json/in.json"), "--save-outputs", dir_.file("json/out.json")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    result = run_polygraphy({"data", "convert", "--load-inputs", dir_.file("json/in.json"), "--load-outputs",
                             dir_.file("json/out.json"), "--save-test-data", dir_.file("again")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("Saving ONNX test data (2 data set(s)) to " + dir_.file("again")));
    for (const char* file : {"test_data_set_0/input_0.pb", "test_data_set_1/output_0.pb"}) {
        std::ifstream a(dir_.file(std::string("case/") + file), std::ios::binary),
            b(dir_.file(std::string("again/") + file), std::ios::binary);
        EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
                  std::string(std::istreambuf_iterator<char>(b), {}))
            << file;
    }
    // The JSON files are Polygraphy's: `run` takes them back.
    result = run_polygraphy({"run", model_, "--ref", "--load-inputs", dir_.file("json/in.json"), "--load-outputs",
                             dir_.file("json/out.json")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST_F(TestDataCli, ConvertRefusesWhatItCannotDo) {
    auto result = run_polygraphy({"data", "convert", "--save-inputs", dir_.file("x.json")});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_THAT(result.output, HasSubstr("[!] Nothing to convert: give --load-inputs and/or --load-outputs"));
    result = run_polygraphy({"data", "convert", "--load-inputs", dir_.file("case")});
    EXPECT_THAT(result.output, HasSubstr("[!] Nowhere to save"));

    // Results of two runners: --runner picks one.
    result = run_polygraphy({"run", model_, "--ref", "--ref", "--save-outputs", dir_.file("two.json")});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    result = run_polygraphy(
        {"data", "convert", "--load-outputs", dir_.file("two.json"), "--save-test-data", dir_.file("out")});
    EXPECT_NE(result.exit_code, 0);
    EXPECT_THAT(result.output, HasSubstr("holds the results of 2 runners; choose one with --runner"));
    result = run_polygraphy({"data", "convert", "--load-outputs", dir_.file("two.json"), "--runner", "nope",
                             "--save-test-data", dir_.file("out")});
    EXPECT_THAT(result.output, HasSubstr("has no runner named 'nope'"));
    EXPECT_FALSE(fs::exists(dir_.file("out")));

    // Inputs and outputs of different iteration counts cannot be paired into data sets.
    result = run_polygraphy({"run", model_, "--ref", "--save-outputs", dir_.file("one.json")});
    result = run_polygraphy({"data", "convert", "--load-inputs", dir_.file("case"), "--load-outputs",
                             dir_.file("one.json"), "--save-test-data", dir_.file("out")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("Cannot pair the data into test-data sets"));
    EXPECT_FALSE(fs::exists(dir_.file("out")));
}

}  // namespace
}  // namespace polygraphy::tools
