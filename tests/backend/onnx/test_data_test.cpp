// ONNX test-data folders (backend/onnx/test_data.h) and the readers by path that accept them (job/saved_data.h).
#include "polygraphy/backend/onnx/test_data.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx-data_pb.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/job/saved_data.h"

namespace polygraphy {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;
namespace fs = std::filesystem;

Tensor floats(const Shape& shape, const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kFloat32, shape, values);
}

void write_pb(const std::string& path, const google::protobuf::MessageLite& proto) {
    fs::create_directories(fs::path(path).parent_path());
    write_file_atomically(path, proto.SerializeAsString());
}

template <typename F>
std::string error_of(F&& call) {
    try {
        call();
    } catch (const PolygraphyException& error) {
        return error.what();
    }
    return "no error";
}

TEST(TestData, SavedSetsReadBackAsInputsAndResults) {
    TempDir dir;
    InputList inputs(2);
    std::vector<TensorMap> outputs(2);
    for (int i = 0; i < 2; ++i) {
        inputs[i].set("x", floats({2}, {1.0 + i, 2}));
        inputs[i].set("ids", Tensor::from_doubles(DataType::kInt64, {3}, {1, 2, 3.0 + i}));
        outputs[i].set("y", floats({1}, {10.0 * i}));
    }
    save_test_data(dir.file("case"), inputs, outputs);
    EXPECT_TRUE(fs::exists(dir.file("case/test_data_set_1/input_1.pb")));
    EXPECT_TRUE(fs::exists(dir.file("case/test_data_set_0/output_0.pb")));
    EXPECT_TRUE(is_test_data_folder(dir.file("case")));
    EXPECT_TRUE(is_test_data_folder(dir.file("case/test_data_set_0")));
    EXPECT_FALSE(is_test_data_folder(dir.path()));

    // Through the readers by path, as --load-inputs/--load-outputs read it.
    EXPECT_TRUE(test_data_holds_inputs(dir.file("case")));
    const InputList loaded = load_saved_inputs(dir.file("case"));
    ASSERT_EQ(loaded.size(), 2u);
    EXPECT_TRUE(loaded[1].at("ids").equals(inputs[1].at("ids")));
    EXPECT_TRUE(loaded[0].at("x").equals(inputs[0].at("x")));
    const RunResults results = load_saved_results(dir.file("case"));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results.lst[0].first, "case");
    EXPECT_TRUE(results.lst[0].second[1].outputs.at("y").equals(outputs[1].at("y")));
    EXPECT_EQ(load_saved_results(dir.file("case/test_data_set_1")).lst[0].first, "test_data_set_1");
    EXPECT_EQ(load_saved_inputs(dir.file("case/test_data_set_1")).size(), 1u);
    // A folder that holds inputs counts as inputs where either kind is accepted.
    EXPECT_TRUE(std::holds_alternative<InputList>(load_saved_results_or_inputs(dir.file("case"))));

    // Saving again replaces the sets; outputs alone are fine.
    save_test_data(dir.file("case"), {}, {outputs[0]});
    EXPECT_FALSE(fs::exists(dir.file("case/test_data_set_0/input_0.pb")));
    EXPECT_FALSE(test_data_holds_inputs(dir.file("case/test_data_set_0")));
    EXPECT_TRUE(std::holds_alternative<RunResults>(load_saved_results_or_inputs(dir.file("case/test_data_set_0"))));
    for (const auto& entry : fs::directory_iterator(dir.file("case")))
        EXPECT_EQ(entry.path().filename().string().rfind("test_data_set_", 0), 0u) << entry.path();  // no temporaries
}

TEST(TestData, FilesAreTakenInNumericOrder) {
    TempDir dir;
    for (int k : {10, 2, 0, 1, 3, 4, 5, 6, 7, 8, 9}) {
        const std::string number = std::to_string(k);
        std::string file = "input_";  // built in steps: GCC 12 warns falsely about "x" + string + "y"
        file += number;
        file += ".pb";
        write_pb(dir.file(file), tensor_to_proto(floats({1}, {double(k)}), "t" + number));
    }
    std::ofstream(dir.file("input_x.pb")) << "ignored";  // not a numbered file
    const TestDataSet set = read_test_data_set(dir.path());
    ASSERT_EQ(set.inputs.size(), 11u);
    EXPECT_EQ(set.inputs[2].first, "t2");
    EXPECT_EQ(set.inputs[10].first, "t10");
}

TEST(TestData, TheGraphNamesUnnamedFilesAndTypesSequencesAndOptionals) {
    TempDir dir;
    testing::ModelBuilder builder;
    builder.initializer("w", floats({1}, {1}));
    builder.input("w", DataType::kFloat32, Shape{1});  // an input that is a weight takes no file
    builder.input("a", DataType::kFloat32, Shape{2});
    auto* seq = builder.proto().mutable_graph()->add_input();
    seq->set_name("s");
    seq->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::INT32);
    auto* opt = builder.proto().mutable_graph()->add_output();
    opt->set_name("o");
    opt->mutable_type()->mutable_optional_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::FLOAT);
    auto* bf16 = builder.proto().mutable_graph()->add_output();
    bf16->set_name("b");
    bf16->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BFLOAT16);
    const OnnxModel model = builder.build();

    write_pb(dir.file("input_0.pb"), tensor_to_proto(floats({2}, {1, 2}), ""));
    onnx::SequenceProto sequence;
    sequence.set_elem_type(onnx::SequenceProto::TENSOR);
    *sequence.add_tensor_values() = tensor_to_proto(Tensor::from_doubles(DataType::kInt32, {1}, {7}), "");
    *sequence.add_tensor_values() = tensor_to_proto(Tensor::from_doubles(DataType::kInt32, {2}, {8, 9}), "");
    write_pb(dir.file("input_1.pb"), sequence);
    onnx::OptionalProto empty;
    empty.set_name("o");
    write_pb(dir.file("output_0.pb"), empty);
    write_pb(dir.file("output_1.pb"), tensor_to_proto(Tensor::from_doubles(DataType::kUInt16, {1}, {0x3f80}), "b"));

    const TestDataSet set = read_test_data_set(dir.path(), &model->graph());
    ASSERT_EQ(set.inputs.size(), 2u);
    EXPECT_EQ(set.inputs[0].first, "a");
    EXPECT_EQ(set.inputs[1].first, "s");
    EXPECT_EQ(set.inputs[1].second.kind, TestDataValue::Kind::kSequence);
    EXPECT_EQ(set.inputs[1].second.elements.size(), 2u);
    EXPECT_EQ(set.inputs[1].second.element_dtype, DataType::kInt32);
    EXPECT_EQ(set.outputs[0].second.kind, TestDataValue::Kind::kEmptyOptional);
    EXPECT_EQ(set.outputs[1].second.tensor.dtype(), DataType::kBFloat16);  // stored as uint16 bit patterns
    EXPECT_EQ(set.outputs[1].second.tensor.value_as_double(0), 1.0);

    // Without the graph: unnamed files cannot be placed, and sequences are not inference data.
    EXPECT_THAT(error_of([&] { load_test_data_inputs(dir.path()); }), HasSubstr("input_0.pb holds an unnamed value"));
    write_pb(dir.file("input_0.pb"), tensor_to_proto(floats({2}, {1, 2}), "a"));
    EXPECT_THAT(error_of([&] { load_test_data_inputs(dir.path()); }), HasSubstr("is not a valid TensorProto"));
}

TEST(TestData, BadFoldersAndFilesAreOneLineErrors) {
    TempDir dir;
    EXPECT_THAT(error_of([&] { find_test_data_sets(dir.file("missing")); }), HasSubstr("is not a folder"));
    EXPECT_THAT(error_of([&] { find_test_data_sets(dir.path()); }),
                HasSubstr("holds neither input_N.pb/output_N.pb files nor test_data_set_N folders"));
    std::ofstream(dir.file("input_0.pb")) << "\xff\xff\xff not a proto";
    EXPECT_THAT(error_of([&] { load_test_data_inputs(dir.path()); }), HasSubstr("input_0.pb"));
    write_pb(dir.file("input_0.pb"), tensor_to_proto(floats({1}, {1}), "a"));
    write_pb(dir.file("input_1.pb"), tensor_to_proto(floats({1}, {2}), "a"));
    EXPECT_THAT(error_of([&] { load_test_data_inputs(dir.path()); }), HasSubstr("holds 'a', which an earlier file"));
    EXPECT_THAT(error_of([&] { save_test_data(dir.file("out"), InputList(2), std::vector<TensorMap>(3)); }),
                HasSubstr("2 iteration(s) of inputs but 3 of outputs"));
    EXPECT_FALSE(fs::exists(dir.file("out")));
    std::ofstream(dir.file("file")) << "x";
    InputList one(1);
    one[0].set("a", floats({1}, {1}));
    EXPECT_THAT(error_of([&] { save_test_data(dir.file("file/out"), one, {}); }), HasSubstr("Could not write"));
}

}  // namespace
}  // namespace polygraphy
