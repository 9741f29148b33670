// `polygraphy inspect model|data|capability` end to end, in child processes.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "build_paths.h"
#include "model_builder.h"
#include "test_helpers.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/run_results.h"

namespace polygraphy::tools {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::run_polygraphy;
using testing::TempDir;

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

const std::string kShared =
    std::string(std::getenv("POLYGRAPHY_SHARED_DIR") ? std::getenv("POLYGRAPHY_SHARED_DIR") : POLYGRAPHY_SHARED_DIR);

// ---- subtool dispatch -----------------------------------------------------------------------------

TEST(InspectCli, SubtoolsAreListedAndRequired) {
    auto result = run_polygraphy({"inspect", "-h"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, ::testing::StartsWith("usage: polygraphy inspect [-h] {model,data,capability,sparsity} ...\n"));
    EXPECT_THAT(result.output, HasSubstr("\nInspection Subtools:\n"));
    EXPECT_THAT(result.output, HasSubstr("    model "));

    result = run_polygraphy({"inspect"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("polygraphy inspect: error: the following arguments are required: subtool"));

    result = run_polygraphy({"inspect", "modle"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("polygraphy inspect: error: argument subtool: invalid choice: 'modle' "
                                         "(choose from 'model', 'data', 'capability', 'sparsity')"));

    result = run_polygraphy({"inspect", "model", "-h"});
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_THAT(result.output, ::testing::StartsWith("usage: polygraphy inspect model [-h]"));
    EXPECT_THAT(result.output, HasSubstr("--show {layers,attrs,weights}"));

    result = run_polygraphy({"-h"});
    EXPECT_THAT(result.output, HasSubstr("    inspect "));
    EXPECT_THAT(result.output, HasSubstr("    check "));
    EXPECT_THAT(result.output, HasSubstr("    data "));
}

// ---- inspect model --------------------------------------------------------------------------------

class InspectModel : public ::testing::Test {
protected:
    void SetUp() override {
        ModelBuilder builder(13, "net");
        builder.input("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(4)});
        builder.initializer("w", Tensor::from_doubles(DataType::kFloat32, {4}, {1, 2, 3, 4}));
        builder.node("Mul", {"x", "w"}, {"m"}, "mul");
        auto& softmax = builder.node("Softmax", {"m"}, {"y"}, "softmax");
        testing::set_attr(softmax, "axis", int64_t{-1});
        builder.output("y", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(4)});
        model_ = dir_.file("net.onnx");
        builder.save(model_);
    }
    TempDir dir_;
    std::string model_;
};

TEST_F(InspectModel, Summary) {
    auto result = run_polygraphy({"inspect", "model", model_});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(result.output, "[I] Loading model: " + model_ +
                                 "\n"
                                 "[I] ==== ONNX Model ====\n"
                                 "    Name: net | ONNX Opset: 13\n"
                                 "    IR Version: 8 | Producer: polygraphy-tests\n"
                                 "    \n"
                                 "    ---- 1 Graph Input(s) ----\n"
                                 "    {x [dtype=float32, shape=('batch', 4)]}\n"
                                 "    \n"
                                 "    ---- 1 Graph Output(s) ----\n"
                                 "    {y [dtype=float32, shape=('batch', 4)]}\n"
                                 "    \n"
                                 "    ---- 1 Initializer(s) ----\n"
                                 "    \n"
                                 "    ---- 2 Node(s) ----\n");
    EXPECT_THAT(result.output, Not(HasSubstr("RUNNING")));
}

TEST_F(InspectModel, LayersAttrsWeights) {
    auto result = run_polygraphy({"inspect", "model", model_, "--show", "layers", "attrs", "weights"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("    Initializer | w [dtype=float32, shape=[4]] | Values:\n"
                                         "        [1. 2. 3. 4.]\n"));
    EXPECT_THAT(result.output, HasSubstr("    Node 0    | mul [Op: Mul]\n"
                                         "        {x [dtype=float32, shape=('batch', 4)],\n"
                                         "         Initializer | w [dtype=float32, shape=(4,)]}\n"
                                         "         -> {m}\n"));
    EXPECT_THAT(result.output, HasSubstr("        ---- Attributes ----\n"
                                         "        softmax.axis = -1\n"));
}

TEST_F(InspectModel, ShapeInferenceFillsIntermediateTensors) {
    auto result = run_polygraphy({"inspect", "model", model_, "--show", "layers", "--shape-inference"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("         -> {m [dtype=float32, shape=('batch', 4)]}\n"));
    result = run_polygraphy({"inspect", "model", model_, "--show", "layers"});
    EXPECT_THAT(result.output, HasSubstr("         -> {m}\n"));
}

TEST_F(InspectModel, OutputsCanBeRemarked) {
    auto result = run_polygraphy({"inspect", "model", model_, "--onnx-outputs", "m"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("---- 1 Graph Output(s) ----\n    {m [shape=()]}\n"));
    result = run_polygraphy({"inspect", "model", model_, "--onnx-outputs", "nothere"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] "));
    EXPECT_THAT(result.output, HasSubstr("nothere"));
}

TEST_F(InspectModel, ExternalDataIsNotLoadedUnlessWeightsAreShown) {
    ModelBuilder builder(13, "ext");
    onnx::TensorProto* tensor = builder.proto().mutable_graph()->add_initializer();
    tensor->set_name("w");
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_dims(2);
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = tensor->add_external_data();
    entry->set_key("location");
    entry->set_value("w.bin");
    const std::string path = dir_.file("ext.onnx");
    builder.save(path);  // w.bin does not exist

    auto result = run_polygraphy({"inspect", "model", path, "--show", "layers"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("{w [dtype=float32, shape=(2,)]}"));

    result = run_polygraphy({"inspect", "model", path, "--show", "weights"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] "));
    EXPECT_THAT(result.output, HasSubstr("w.bin"));

    result = run_polygraphy({"inspect", "model", path, "--show", "weights", "--ignore-external-data"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[E] Failed to load weights.\n"));
    EXPECT_THAT(result.output, HasSubstr("    Initializer | w [dtype=float32, shape=[2]] | Values:\n"
                                         "        <error: failed to load weights>\n"));
}

TEST_F(InspectModel, BadInput) {
    auto result = run_polygraphy({"inspect", "model", dir_.file("missing.onnx")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Model file does not exist: '" + dir_.file("missing.onnx") + "'"));

    std::ofstream(dir_.file("corrupt.onnx")) << "garbage that is not protobuf \xff\xff\xff";
    result = run_polygraphy({"inspect", "model", dir_.file("corrupt.onnx")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("is not a valid ONNX model"));
    EXPECT_THAT(result.output, Not(HasSubstr("==== ONNX Model")));

    result = run_polygraphy({"inspect", "model", model_, "--display-as", "trt"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] TensorRT is not available in this build"));

    result = run_polygraphy({"inspect", "model", model_, "--show", "everything"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("invalid choice: 'everything'"));

    result = run_polygraphy({"inspect", "model"});
    EXPECT_EQ(result.exit_code, 2);
}

// The options of Polygraphy's TensorRT and TensorFlow loaders that `inspect model` takes act on a
// TensorRT network or a TensorFlow graph: each is refused with one line, naming it, before any output.
TEST_F(InspectModel, TensorRtAndTensorFlowLoadingOptionsAreRefused) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--plugins", "p.so"}, "TensorRT"},         {{"--layer-precisions", "mul:fp16"}, "TensorRT"},
        {{"--tensor-dtypes", "x:fp16"}, "TensorRT"}, {{"--onnx-flags", "native_instancenorm"}, "TensorRT"},
        {{"--strongly-typed"}, "TensorRT"},          {{"--load-runtime", "r.so"}, "TensorRT"},
        {{"--ckpt", "model"}, "TensorFlow"},         {{"--freeze-graph"}, "TensorFlow"},
    };
    for (const auto& [option, backend] : cases) {
        std::vector<std::string> args = {"inspect", "model", model_};
        args.insert(args.end(), option.begin(), option.end());
        const auto result = run_polygraphy(args);
        EXPECT_EQ(result.exit_code, 1) << option[0];
        EXPECT_EQ(testing::count_occurrences(result.output, "[!]"), 1u) << result.output;
        EXPECT_THAT(result.output,
                    HasSubstr("[!] " + backend + " is not available in this build (option: " + option[0] + ")\n"));
        EXPECT_THAT(result.output, Not(HasSubstr("==== ONNX Model")));
    }
    // Options of the network's outputs are not inspect's (Polygraphy leaves them out too).
    const auto result = run_polygraphy({"inspect", "model", model_, "--trt-outputs", "y"});
    EXPECT_THAT(result.output, HasSubstr("Unrecognized Options: ['--trt-outputs', 'y']"));
}

TEST_F(InspectModel, PolygraphyTestModelsIfPresent) {
    const std::string dir = kShared + "/models/polygraphy-tests";
    if (!fs::exists(dir)) GTEST_SKIP() << "no shared models";
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() != ".onnx") continue;
        auto result = run_polygraphy({"inspect", "model", entry.path().string(), "--show", "layers", "attrs"});
        // Every model prints (or fails with a one-line message, never a crash).
        EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 1) << entry.path() << "\n" << result.output;
        if (result.exit_code == 0) {
            EXPECT_THAT(result.output, HasSubstr("==== ONNX Model ===="));
        }
    }
}

// ---- inspect data ---------------------------------------------------------------------------------

TEST(InspectData, MatchesPolygraphysReportOnItsFile) {
    const std::string fixture = kShared + "/fixtures/polygraphy-json/run_results.json";
    const std::string expected = kShared + "/fixtures/polygraphy-json/inspect_data_report.txt";
    if (!fs::exists(fixture) || !fs::exists(expected)) GTEST_SKIP() << "no fixtures";
    auto result = run_polygraphy({"inspect", "data", fixture, "--show-values"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(result.output, read_text(expected));
}

TEST(InspectData, InputsFilesAndOptions) {
    TempDir dir;
    InputList inputs(2);
    inputs[0].set("x", Tensor::from_doubles(DataType::kFloat32, {1, 2}, {1, 2}));
    inputs[1].set("x", Tensor::from_doubles(DataType::kFloat32, {1, 2}, {3, 4}));
    save_inputs(inputs, dir.file("in.json"));
    auto result = run_polygraphy({"inspect", "data", dir.file("in.json")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, ::testing::StartsWith("[I] ==== Data (2 iterations) ====\n    \n    x [dtype=float32, "
                                                     "shape=(1, 2)] | Stats: mean=1.5"));
    EXPECT_THAT(result.output, Not(HasSubstr("mean=3.5")));
    result = run_polygraphy({"inspect", "data", dir.file("in.json"), "-a", "-s", "-n", "-1", "--line-width", "-1"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("-- Iteration: 1"));
    EXPECT_THAT(result.output, HasSubstr("mean=3.5"));
    EXPECT_THAT(result.output, HasSubstr("[[3. 4.]]"));

    result = run_polygraphy({"inspect", "data", dir.file("in.json"), "--num-items", "-2"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] --num-items must be -1"));
}

TEST(InspectData, BadFiles) {
    TempDir dir;
    auto result = run_polygraphy({"inspect", "data", dir.file("missing.json")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] "));
    EXPECT_THAT(result.output, HasSubstr("missing.json"));
    std::ofstream(dir.file("bad.json")) << "[{\"x\": 1}]";
    result = run_polygraphy({"inspect", "data", dir.file("bad.json")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("bad.json"));
    result = run_polygraphy({"inspect", "data"});
    EXPECT_EQ(result.exit_code, 2);
}

// ---- inspect capability ---------------------------------------------------------------------------

class InspectCapability : public ::testing::Test {
protected:
    void SetUp() override {
        // Relu -> FAKE! (custom op) -> Relu -> FAKER! -> Relu
        ModelBuilder builder(17, "cap");
        builder.opset_import("custom", 1);
        builder.input("x", DataType::kFloat32, Shape{1, 4});
        builder.node("Relu", {"x"}, {"a"}, "relu0");
        builder.node("FAKE!", {"a"}, {"b"}, "fake", "custom");
        builder.node("Relu", {"b"}, {"c"}, "relu1");
        builder.node("FAKER!", {"c"}, {"d"}, "faker", "custom");
        builder.node("Relu", {"d"}, {"y"}, "relu2");
        builder.output("y", DataType::kFloat32, Shape{1, 4});
        for (const char* name : {"a", "b", "c", "d"}) {  // as shape inference would leave them
            auto* value_info = builder.proto().mutable_graph()->add_value_info();
            value_info->set_name(name);
            value_info->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        }
        model_ = dir_.file("cap.onnx");
        builder.save(model_);
        ModelBuilder good(17, "good");
        good.input("x", DataType::kFloat32, Shape{1, 4});
        good.node("Relu", {"x"}, {"y"}, "relu");
        good.output("y", DataType::kFloat32, Shape{1, 4});
        good_ = dir_.file("good.onnx");
        good.save(good_);
    }
    TempDir dir_;
    std::string model_, good_;
};

TEST_F(InspectCapability, PartitionsAndSummary) {
    const std::string out = dir_.file("dumps");
    auto result = run_polygraphy({"inspect", "capability", model_, "-o", out});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(out)) files.push_back(entry.path().filename().string());
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files, (std::vector<std::string>{"results.txt", "supported_subgraph-nodes-0-0.onnx",
                                               "supported_subgraph-nodes-2-2.onnx", "supported_subgraph-nodes-4-4.onnx",
                                               "unsupported_subgraph-nodes-1-1.onnx",
                                               "unsupported_subgraph-nodes-3-3.onnx"}));
    EXPECT_THAT(result.output, HasSubstr("[I] ===== Summary =====\n    Operator | Count   | Reason"));
    EXPECT_THAT(result.output, HasSubstr("    FAKE!    |       1 | The built-in runtime has no kernel for FAKE! (domain "
                                         "'custom', opset 1)  | [[1, 2]]\n"));
    EXPECT_THAT(result.output, HasSubstr("    FAKER!   |       1 | The built-in runtime has no kernel for FAKER! (domain "
                                         "'custom', opset 1) | [[3, 4]]"));
    EXPECT_THAT(read_text(out + "/results.txt"), ::testing::StartsWith("===== Summary =====\nOperator | Count   |"));

    // The saved subgraphs are standalone: a supported one runs on its own.
    result = run_polygraphy({"run", out + "/supported_subgraph-nodes-0-0.onnx", "--ref"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    result = run_polygraphy({"inspect", "model", out + "/unsupported_subgraph-nodes-1-1.onnx"});
    EXPECT_THAT(result.output, HasSubstr("---- 1 Graph Input(s) ----\n    {a [dtype=float32, shape=(1, 4)]}"));
}

TEST_F(InspectCapability, FullySupported) {
    auto result = run_polygraphy({"inspect", "capability", good_, "-o", dir_.file("none")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("[I] Graph is fully supported by the built-in runtime (ref); Will not "
                                         "generate subgraphs."));
    EXPECT_FALSE(fs::exists(dir_.file("none")));
}

TEST_F(InspectCapability, OnnxRuntime) {
    if (!onnxrt::is_available()) GTEST_SKIP() << "ONNX-Runtime is not available";
    auto result = run_polygraphy({"inspect", "capability", model_, "--backend", "onnxrt", "-o", dir_.file("ort")});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("FAKE!"));
    EXPECT_TRUE(fs::exists(dir_.file("ort/unsupported_subgraph-nodes-1-1.onnx"))) << result.output;
    EXPECT_TRUE(fs::exists(dir_.file("ort/supported_subgraph-nodes-2-2.onnx"))) << result.output;
    EXPECT_THAT(result.output, HasSubstr("| Fatal error: custom:FAKE!(-1) is not a registered function/op"));
    result = run_polygraphy({"inspect", "capability", good_, "--backend", "onnxrt"});
    EXPECT_THAT(result.output, HasSubstr("Graph is fully supported by ONNX-Runtime"));
}

TEST_F(InspectCapability, BadInput) {
    auto result = run_polygraphy({"inspect", "capability", model_, "--backend", "trt"});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_THAT(result.output, HasSubstr("argument --backend: invalid choice: 'trt'"));

    std::ofstream(dir_.file("file")) << "x";
    result = run_polygraphy({"inspect", "capability", model_, "-o", dir_.file("file")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] Cannot save capability results to '" + dir_.file("file") +
                                         "': it is not a folder"));
    result = run_polygraphy({"inspect", "capability", model_, "-o", dir_.file("file") + "/sub"});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("[!] "));

    result = run_polygraphy({"inspect", "capability", dir_.file("missing.onnx")});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("does not exist"));
}

}  // namespace
}  // namespace polygraphy::tools
