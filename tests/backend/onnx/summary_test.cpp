// str_from_onnx (Polygraphy's inspect model text) and onnx_structure_from_path (no weights).
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ModelBuilder;
using testing::TempDir;

OnnxSummaryOptions shown(bool layers, bool attrs, bool weights) {
    OnnxSummaryOptions options;
    options.show_layers = layers;
    options.show_attrs = attrs;
    options.show_weights = weights;
    return options;
}

OnnxModel identity_model() {
    ModelBuilder builder(8, "test_identity");
    builder.input("x", DataType::kFloat32, Shape{1, 1, 2, 2});
    builder.node("Identity", {"x"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{1, 1, 2, 2});
    return builder.build();
}

TEST(StrFromOnnx, SummaryMatchesPolygraphy) {
    const OnnxModel model = identity_model();
    model->clear_producer_name();
    model->clear_producer_version();
    EXPECT_EQ(str_from_onnx(*model),
              "Name: test_identity | ONNX Opset: 8\n"
              "IR Version: 8\n"
              "\n"
              "---- 1 Graph Input(s) ----\n"
              "{x [dtype=float32, shape=(1, 1, 2, 2)]}\n"
              "\n"
              "---- 1 Graph Output(s) ----\n"
              "{y [dtype=float32, shape=(1, 1, 2, 2)]}\n"
              "\n"
              "---- 0 Initializer(s) ----\n"
              "\n"
              "---- 1 Node(s) ----");
}

TEST(StrFromOnnx, LayersShowNodesWithTheirTensors) {
    const OnnxModel model = identity_model();
    model->set_producer_name("pytorch");
    model->set_producer_version("2.1.0");
    OnnxSummaryOptions options;
    options.show_layers = true;
    EXPECT_EQ(str_from_onnx(*model, options),
              "Name: test_identity | ONNX Opset: 8\n"
              "IR Version: 8 | Producer: pytorch 2.1.0\n"
              "\n"
              "---- 1 Graph Input(s) ----\n"
              "{x [dtype=float32, shape=(1, 1, 2, 2)]}\n"
              "\n"
              "---- 1 Graph Output(s) ----\n"
              "{y [dtype=float32, shape=(1, 1, 2, 2)]}\n"
              "\n"
              "---- 0 Initializer(s) ----\n"
              "{}\n"
              "\n"
              "---- 1 Node(s) ----\n"
              "Node 0    |  [Op: Identity]\n"
              "    {x [dtype=float32, shape=(1, 1, 2, 2)]}\n"
              "     -> {y [dtype=float32, shape=(1, 1, 2, 2)]}");
}

TEST(StrFromOnnx, InitializersAndUnknownTensors) {
    ModelBuilder builder(11, "onnx_graphsurgeon");
    builder.input("inp", DataType::kFloat32, Shape{1, 3});
    builder.initializer("a", Tensor::from_doubles(DataType::kFloat32, {1, 3}, {1, 2, 3}));
    builder.node("Add", {"inp", "a"}, {"c"}, "add0");
    builder.node("Add", {"c", "inp"}, {"out"}, "add1");
    builder.output("out", DataType::kFloat32, Shape{1, 3});
    builder.proto().mutable_graph()->add_input()->set_name("a");  // an initializer listed as input too
    OnnxSummaryOptions options;
    options.show_layers = true;
    const std::string text = str_from_onnx(*builder.build(), options);
    EXPECT_THAT(text, HasSubstr("---- 1 Graph Input(s) ----\n{inp [dtype=float32, shape=(1, 3)]}\n"));
    EXPECT_THAT(text, HasSubstr("---- 1 Initializer(s) ----\n{a [dtype=float32, shape=(1, 3)]}\n"));
    EXPECT_THAT(text, HasSubstr("Node 0    | add0 [Op: Add]\n"
                                "    {inp [dtype=float32, shape=(1, 3)],\n"
                                "     Initializer | a [dtype=float32, shape=(1, 3)]}\n"
                                "     -> {c}\n"));
    EXPECT_THAT(text, HasSubstr("Node 1    | add1 [Op: Add]\n"
                                "    {c,\n"
                                "     inp [dtype=float32, shape=(1, 3)]}\n"
                                "     -> {out [dtype=float32, shape=(1, 3)]}"));
}

TEST(StrFromOnnx, WeightsAndAttributes) {
    ModelBuilder builder(11, "g");
    builder.initializer("X", Tensor::from_doubles(DataType::kFloat32, {2, 2}, {1, 1, 1, 1}));
    auto& constant = builder.node("Constant", {}, {"k"});
    testing::set_attr(constant, "value", Tensor::from_doubles(DataType::kInt64, {2}, {3, 4}));
    auto& node = builder.node("LeakyRelu", {"X"}, {"Y"}, "leaky");
    testing::set_attr(node, "alpha", 1e-5f);
    testing::set_attr(node, "mode", std::string("fast"));
    testing::set_attr(node, "axes", std::vector<int64_t>{0, -1});
    testing::set_attr(node, "scales", std::vector<float>{0.5f, 2.0f});
    builder.output("Y", DataType::kFloat32, Shape{2, 2});
    OnnxSummaryOptions options = shown(true, true, true);
    const std::string text = str_from_onnx(*builder.build(), options);
    EXPECT_THAT(text, HasSubstr("---- 1 Initializer(s) ----\n"
                                "Initializer | X [dtype=float32, shape=[2, 2]] | Values:\n"
                                "    [[1. 1.]\n"
                                "     [1. 1.]]\n"));
    EXPECT_THAT(text, HasSubstr("Node 0    |  [Op: Constant]\n"
                                "    {} -> {k}\n"
                                "    ---- Attributes ----\n"
                                "    value = Tensor: [dtype=int64, shape=[2]] | Values:\n"
                                "        [3 4]\n"));
    EXPECT_THAT(text, HasSubstr("    ---- Attributes ----\n"
                                "    leaky.alpha = 9.999999747378752e-06\n"
                                "    leaky.mode = fast\n"
                                "    leaky.axes = [0, -1]\n"
                                "    leaky.scales = [0.5, 2.0]"));
}

TEST(StrFromOnnx, SubgraphsAreNested) {
    ModelBuilder builder(10, "graph");
    builder.input("initial", DataType::kFloat32, Shape{2});
    builder.input("x", DataType::kFloat32, Shape{3, 2});
    auto& scan = builder.node("Scan", {"initial", "x"}, {"y", "z"});
    builder.output("y", DataType::kFloat32, Shape{2});
    builder.output("z", DataType::kFloat32, Shape{3, 2});
    onnx::GraphProto body;
    auto add_value = [](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name) {
        auto* value = list->Add();
        value->set_name(name);
        value->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
        value->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
    };
    add_value(body.mutable_input(), "sum_in");
    add_value(body.mutable_input(), "next");
    add_value(body.mutable_output(), "sum_out");
    add_value(body.mutable_output(), "scan_out");
    auto* add = body.add_node();
    add->set_op_type("Add");
    add->add_input("sum_in");
    add->add_input("next");
    add->add_output("sum_out");
    auto* identity = body.add_node();
    identity->set_op_type("Identity");
    identity->add_input("sum_out");
    identity->add_output("scan_out");
    auto* attr = scan.add_attribute();
    attr->set_name("body");
    attr->set_type(onnx::AttributeProto::GRAPH);
    *attr->mutable_g() = body;
    testing::set_attr(scan, "num_scan_inputs", int64_t{1});

    OnnxSummaryOptions options = shown(true, true, true);
    const std::string text = str_from_onnx(*builder.build(), options);
    // Polygraphy's layout: the body at two more levels, under the attribute line.
    EXPECT_THAT(text, HasSubstr("    ---- Attributes ----\n"
                                "    body = \n"
                                "            ---- 2 Subgraph Input(s) ----\n"
                                "            {sum_in [dtype=float32, shape=(2,)],\n"
                                "             next [dtype=float32, shape=(2,)]}\n"
                                "            \n"
                                "            ---- 2 Subgraph Output(s) ----\n"));
    EXPECT_THAT(text, HasSubstr("            ---- 2 Node(s) ----\n"
                                "            Node 0    |  [Op: Add]\n"
                                "                {sum_in [dtype=float32, shape=(2,)],\n"
                                "                 next [dtype=float32, shape=(2,)]}\n"
                                "                 -> {sum_out [dtype=float32, shape=(2,)]}\n"));
    EXPECT_THAT(text, HasSubstr("    num_scan_inputs = 1"));
}

TEST(StrFromOnnx, DynamicDimsAndOtherOpsets) {
    ModelBuilder builder(13, "");
    builder.input("X", DataType::kFloat32, DynShape{Dim::named("dim0"), Dim::unknown(), Dim::fixed(3)});
    builder.node("Identity", {"X"}, {"Y"});
    builder.output("Y", DataType::kFloat32, DynShape{Dim::named("dim0"), Dim::unknown(), Dim::fixed(3)});
    builder.opset_import("com.microsoft", 1);
    const std::string text = str_from_onnx(*builder.build());
    EXPECT_THAT(text, ::testing::StartsWith("Name:  | ONNX Opset: 13 | Other Opsets: {'com.microsoft': 1}\n"));
    EXPECT_THAT(text, HasSubstr("{X [dtype=float32, shape=('dim0', -1, 3)]}"));
}

TEST(StrFromOnnx, NoDefaultOpsetIsUnknown) {
    ModelBuilder builder(13, "g");
    builder.proto().clear_opset_import();
    EXPECT_THAT(str_from_onnx(*builder.build()), ::testing::StartsWith("Name: g | ONNX Opset: Unknown\n"));
}

TEST(StrFromOnnx, LocalFunctionsAreListed) {
    ModelBuilder builder(17, "g");
    builder.opset_import("custom", 1);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Double", {"x"}, {"y"}, "call", "custom");
    builder.output("y", DataType::kFloat32, Shape{2});
    auto* function = builder.proto().add_functions();
    function->set_name("Double");
    function->set_domain("custom");
    function->add_input("a");
    function->add_output("b");
    function->add_attribute("scale");
    auto* node = function->add_node();
    node->set_op_type("Add");
    node->add_input("a");
    node->add_input("a");
    node->add_output("b");
    OnnxSummaryOptions options;
    options.show_layers = true;
    const std::string text = str_from_onnx(*builder.build(), options);
    EXPECT_THAT(text, HasSubstr("---- 1 Local Function(s) ----\n"
                                "Function 0    | Double [Op: Function, Domain: custom]\n"
                                "    {a}\n"
                                "     -> {b}\n"
                                "    Attributes: ['scale']\n"
                                "    ---- 1 Node(s) ----\n"
                                "    Node 0    |  [Op: Add]\n"
                                "        {a,\n"
                                "         a}\n"
                                "         -> {b}"));
}

TEST(StrFromOnnx, UndecodableWeightsArePlaceholders) {
    ModelBuilder builder(11, "g");
    onnx::TensorProto* tensor = builder.proto().mutable_graph()->add_initializer();
    tensor->set_name("w");
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_dims(3);
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = tensor->add_external_data();
    entry->set_key("location");
    entry->set_value("w.bin");
    OnnxSummaryOptions options;
    options.show_weights = true;
    std::string text;
    logger().set_severity(Severity::kInfo);  // the library is silent by default
    const std::string log = testing::captured_stdout([&] { text = str_from_onnx(*builder.build(), options); });
    EXPECT_THAT(text, HasSubstr("Initializer | w [dtype=float32, shape=[3]] | Values:\n"
                                "    <error: failed to load weights>"));
    EXPECT_THAT(log, HasSubstr("[E] Failed to load weights.\n    Note: Error was: "));
}

// ---- onnx_structure_from_path -----------------------------------------------------------------

class StructureLoad : public ::testing::Test {
protected:
    void SetUp() override { logger().set_severity(Severity::kWarning); }
    void TearDown() override { logger().reset(); }
    TempDir dir_;
};

TEST_F(StructureLoad, DropsTensorValuesEverywhereAndKeepsTheRest) {
    ModelBuilder builder(17, "big");
    builder.input("x", DataType::kFloat32, Shape{64, 64});
    builder.initializer("w", testing::random_tensor({64, 64}, 1));
    builder.node("MatMul", {"x", "w"}, {"m"}, "matmul");
    auto& constant = builder.node("Constant", {}, {"k"}, "const");
    testing::set_attr(constant, "value", testing::random_tensor({16}, 2));
    builder.node("Add", {"m", "k"}, {"y"}, "add");
    builder.output("y", DataType::kFloat32, Shape{64, 64});
    builder.proto().set_producer_name("test");
    const std::string path = dir_.file("m.onnx");
    builder.save(path);

    const OnnxModel full = onnx_from_path(path);
    const OnnxModel structure = onnx_structure_from_path(path);
    EXPECT_EQ(structure->graph().initializer(0).raw_data().size(), 0u);
    EXPECT_EQ(structure->graph().initializer(0).dims_size(), 2);
    EXPECT_EQ(structure->graph().node(1).attribute(0).t().raw_data().size(), 0u);
    EXPECT_GT(full->graph().initializer(0).raw_data().size(), 0u);
    OnnxSummaryOptions options = shown(true, true, false);
    EXPECT_EQ(str_from_onnx(*structure, options), str_from_onnx(*full, options));
    EXPECT_LT(structure->ByteSizeLong(), 2000u);
}

TEST_F(StructureLoad, TypedDataFieldsAndSubgraphTensorsAreDropped) {
    ModelBuilder builder(17, "g");
    onnx::TensorProto* tensor = builder.proto().mutable_graph()->add_initializer();
    tensor->set_name("f");
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_dims(3);
    for (float v : {1.f, 2.f, 3.f}) tensor->add_float_data(v);
    auto& node = builder.node("If", {"c"}, {"y"}, "if");
    onnx::GraphProto branch;
    branch.set_name("then");
    *branch.add_initializer() = *tensor;
    auto* attr = node.add_attribute();
    attr->set_name("then_branch");
    attr->set_type(onnx::AttributeProto::GRAPH);
    *attr->mutable_g() = branch;
    auto* otherwise = node.add_attribute();  // If needs both branches (the node check at load)
    otherwise->set_name("else_branch");
    otherwise->set_type(onnx::AttributeProto::GRAPH);
    otherwise->mutable_g()->set_name("else");
    const std::string path = dir_.file("typed.onnx");
    builder.save(path);
    const OnnxModel structure = onnx_structure_from_path(path);
    EXPECT_EQ(structure->graph().initializer(0).float_data_size(), 0);
    EXPECT_EQ(structure->graph().initializer(0).name(), "f");
    EXPECT_EQ(structure->graph().node(0).attribute(0).g().initializer(0).float_data_size(), 0);
    EXPECT_EQ(structure->graph().node(0).attribute(0).g().initializer(0).dims(0), 3);
}

TEST_F(StructureLoad, ExternalDataIsNotRead) {
    ModelBuilder builder(17, "g");
    onnx::TensorProto* tensor = builder.proto().mutable_graph()->add_initializer();
    tensor->set_name("w");
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    tensor->add_dims(4);
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = tensor->add_external_data();
    entry->set_key("location");
    entry->set_value("missing.bin");
    const std::string path = dir_.file("ext.onnx");
    builder.save(path);
    const OnnxModel structure = onnx_structure_from_path(path);  // the data file does not exist: not needed
    EXPECT_EQ(structure->graph().initializer(0).external_data(0).value(), "missing.bin");
}

TEST_F(StructureLoad, DamagedFilesNeverCrash) {
    // Every truncation and a sweep of byte changes of a small model with a subgraph and a function:
    // either a model or a FormatError, and the summary of whatever loads can be printed.
    ModelBuilder builder(17, "g");
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.initializer("w", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    auto& node = builder.node("If", {"c"}, {"y"}, "if");
    onnx::GraphProto branch;
    branch.set_name("b");
    auto* inner = branch.add_node();
    inner->set_op_type("Identity");
    inner->add_input("w");
    inner->add_output("o");
    auto* attr = node.add_attribute();
    attr->set_name("then_branch");
    attr->set_type(onnx::AttributeProto::GRAPH);
    *attr->mutable_g() = branch;
    builder.proto().add_functions()->set_name("f");
    const std::string path = dir_.file("m.onnx");
    builder.save(path);
    std::string bytes;
    {
        std::ifstream in(path, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string damaged = dir_.file("damaged.onnx");
    auto attempt = [&](const std::string& content) {
        std::ofstream(damaged, std::ios::binary | std::ios::trunc) << content;
        try {
            const OnnxModel model = onnx_structure_from_path(damaged);
            (void)str_from_onnx(*model, shown(true, true, false));
        } catch (const FormatError&) {
        } catch (const PolygraphyException&) {
        }
    };
    for (std::size_t size = 1; size < bytes.size(); ++size) attempt(bytes.substr(0, size));
    for (std::size_t i = 0; i < bytes.size(); ++i)
        for (unsigned char value : {0x00, 0x7f, 0x80, 0xff}) {
            std::string changed = bytes;
            changed[i] = static_cast<char>(value);
            attempt(changed);
        }
}

TEST_F(StructureLoad, AnyIrVersionAndOpset) {
    for (int64_t ir : {3, 7, 9, 10, 11}) {
        ModelBuilder builder(ir == 3 ? 7 : 23, "g");
        builder.ir_version(ir);
        builder.input("x", DataType::kFloat32, Shape{2});
        builder.node("Relu", {"x"}, {"y"});
        builder.output("y", DataType::kFloat32, Shape{2});
        const std::string path = dir_.file("ir" + std::to_string(ir) + ".onnx");
        builder.save(path);
        const std::string text = str_from_onnx(*onnx_structure_from_path(path));
        EXPECT_THAT(text, HasSubstr("IR Version: " + std::to_string(ir))) << text;
        EXPECT_THAT(text, HasSubstr(ir == 3 ? "ONNX Opset: 7" : "ONNX Opset: 23")) << text;
    }
}

TEST_F(StructureLoad, FileModelReadsWeightsWhenAsked) {
    ModelBuilder builder(17, "g");
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.initializer("w", testing::random_tensor({4}, 5));
    onnx::TensorProto* typed = builder.proto().mutable_graph()->add_initializer();
    typed->set_name("typed");
    typed->set_data_type(onnx::TensorProto::INT64);
    typed->add_dims(2);
    typed->add_int64_data(7);
    typed->add_int64_data(-8);
    auto& constant = builder.node("Constant", {}, {"k"}, "const");
    testing::set_attr(constant, "value", Tensor::from_doubles(DataType::kInt32, {3}, {1, 2, 3}));
    builder.node("Add", {"x", "w"}, {"y"});
    builder.output("y", DataType::kFloat32, Shape{4});
    const std::string path = dir_.file("w.onnx");
    builder.save(path);

    const OnnxFileModel file(path);
    const auto& graph = file.model()->graph();
    EXPECT_TRUE(graph.initializer(0).raw_data().empty());
    EXPECT_TRUE(file.decode_tensor(graph.initializer(0)).equals(testing::random_tensor({4}, 5)));
    EXPECT_TRUE(file.decode_tensor(graph.initializer(1)).equals(Tensor::from_doubles(DataType::kInt64, {2}, {7, -8})));
    EXPECT_TRUE(file.decode_tensor(graph.node(0).attribute(0).t())
                    .equals(Tensor::from_doubles(DataType::kInt32, {3}, {1, 2, 3})));

    // The whole summary with weights is the same as from the fully loaded model.
    OnnxSummaryOptions lazy = shown(true, true, true);
    lazy.decode = [&](const onnx::TensorProto& tensor) { return file.decode_tensor(tensor); };
    EXPECT_EQ(str_from_onnx(*file.model(), lazy), str_from_onnx(*onnx_from_path(path), shown(true, true, true)));

    onnx::TensorProto bad = graph.initializer(0);
    for (auto& entry : *bad.mutable_external_data())
        if (entry.key() == kMappedOffsetKey) entry.set_value("999999");
    EXPECT_THAT(testing::error_message<FormatError>([&] { file.decode_tensor(bad); }),
                HasSubstr("Tensor 'w': its data would lie outside"));
    for (auto& entry : *bad.mutable_external_data())
        if (entry.key() == kMappedOffsetKey) entry.set_value("12abc");
    EXPECT_THAT(testing::error_message<FormatError>([&] { file.decode_tensor(bad); }),
                HasSubstr("invalid file reference: 12abc"));
}

TEST_F(StructureLoad, BadFilesAreClearErrors) {
    EXPECT_THAT(testing::error_message<PolygraphyException>([&] { onnx_structure_from_path(dir_.file("nope.onnx")); }),
                HasSubstr("Model file does not exist: '" + dir_.file("nope.onnx") + "'"));
    EXPECT_THAT(testing::error_message<PolygraphyException>([&] { onnx_structure_from_path(dir_.path()); }),
                HasSubstr("Expected a file, but got a directory"));
    const std::string empty = dir_.file("empty.onnx");
    std::ofstream(empty).close();
    EXPECT_THAT(testing::error_message<FormatError>([&] { onnx_structure_from_path(empty); }),
                HasSubstr("is not a valid ONNX model: it is empty"));
    const std::string text = dir_.file("text.onnx");
    std::ofstream(text) << "this is not a model at all";
    EXPECT_THAT(testing::error_message<FormatError>([&] { onnx_structure_from_path(text); }),
                HasSubstr("'" + text + "' is not a valid ONNX model"));

    // A model cut in the middle of its weights.
    ModelBuilder builder(17, "g");
    builder.initializer("w", testing::random_tensor({256}, 3));
    const std::string whole = dir_.file("whole.onnx");
    builder.save(whole);
    std::string bytes;
    {
        std::ifstream in(whole, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string cut = dir_.file("cut.onnx");
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    EXPECT_THAT(testing::error_message<FormatError>([&] { onnx_structure_from_path(cut); }),
                HasSubstr("runs past the end"));
    // A graph-less protobuf message.
    const std::string no_graph = dir_.file("nograph.onnx");
    std::ofstream(no_graph, std::ios::binary) << std::string("\x08\x07", 2);  // ir_version = 7 only
    EXPECT_THAT(testing::error_message<FormatError>([&] { onnx_structure_from_path(no_graph); }),
                HasSubstr("it has no graph"));
}

}  // namespace
}  // namespace polygraphy
