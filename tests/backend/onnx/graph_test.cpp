#include "polygraphy/backend/onnx/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "model_builder.h"
#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using testing::error_message;
using ::testing::HasSubstr;
using testing::make_node;
using testing::ModelBuilder;
using testing::set_attr;
using testing::TempDir;

Tensor int64s(const Shape& shape, const std::vector<double>& values) {
    return Tensor::from_doubles(DataType::kInt64, shape, values);
}

// x[2,3] -> Add(W) -> a -> Relu -> b -> Reshape(b, Concat(Unsqueeze(Gather(Shape(b), 0)), [-1])) -> r
// -> Mul(r, Constant * 2) -> y; plus a dead Sigmoid and an unused initializer.
ModelBuilder sample_builder(int64_t opset = 17, const Shape& w_shape = {2, 3}) {
    ModelBuilder builder(opset);
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.initializer("W", testing::random_tensor(w_shape, 1));
    builder.initializer("two", Tensor::from_doubles(DataType::kFloat32, {3}, {2, 2, 2}));
    builder.initializer("idx0", int64s({}, {0}));
    builder.initializer("axes0", int64s({1}, {0}));
    builder.initializer("minus1", int64s({1}, {-1}));
    builder.initializer("unused_w", testing::random_tensor({4}, 2));
    auto& constant = builder.node("Constant", {}, {"c0"}, "const0");
    set_attr(constant, "value", Tensor::from_doubles(DataType::kFloat32, {3}, {0.5, -1, 3}));
    builder.node("Mul", {"c0", "two"}, {"scale"}, "scale_mul");
    builder.node("Add", {"x", "W"}, {"a"}, "add");
    builder.node("Relu", {"a"}, {"b"}, "relu");
    builder.node("Shape", {"b"}, {"s"}, "shape");
    builder.node("Gather", {"s", "idx0"}, {"n"}, "gather");
    builder.node("Unsqueeze", {"n", "axes0"}, {"n1"}, "unsqueeze");
    auto& concat = builder.node("Concat", {"n1", "minus1"}, {"newshape"}, "concat");
    set_attr(concat, "axis", int64_t{0});
    builder.node("Reshape", {"b", "newshape"}, {"r"}, "reshape");
    builder.node("Mul", {"r", "scale"}, {"y"}, "mul");
    builder.node("Sigmoid", {"x"}, {"dead"}, "dead_sigmoid");
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    return builder;
}

TensorMap run_model(const onnx::ModelProto& model, const TensorMap& feed) {
    ref::Session session(model);
    return session.run(feed);
}

TensorMap sample_feed() {
    TensorMap feed;
    feed.set("x", testing::random_tensor({2, 3}, 7));
    return feed;
}

void expect_same_outputs(const TensorMap& expected, const TensorMap& actual) {
    ASSERT_EQ(expected.size(), actual.size());
    for (const auto& [name, tensor] : expected) {
        const Tensor* other = actual.find(name);
        ASSERT_NE(other, nullptr) << name;
        EXPECT_TRUE(tensor.equals(*other)) << name;
    }
}

std::vector<std::string> op_types(const onnx::ModelProto& model) {
    std::vector<std::string> ops;
    for (const auto& node : model.graph().node()) ops.push_back(node.op_type());
    return ops;
}

const onnx::ValueInfoProto* find_value_info(const onnx::GraphProto& graph, const std::string& name) {
    for (const auto& info : graph.value_info())
        if (info.name() == name) return &info;
    return nullptr;
}

// ---- fold_constants -----------------------------------------------------------------------------

TEST(FoldConstantsTest, FoldsConstantAndShapeSubgraphsAndKeepsOutputs) {
    OnnxModel model = sample_builder().build();
    const TensorMap expected = run_model(*model, sample_feed());
    FoldConstantsStats stats = fold_constants(*model);
    EXPECT_EQ(stats.nodes_folded, 6u);  // Constant, scale Mul, Shape, Gather, Unsqueeze, Concat
    EXPECT_THAT(op_types(*model), ElementsAre("Add", "Relu", "Reshape", "Mul"));
    expect_same_outputs(expected, run_model(*model, sample_feed()));
    // The folded shape is a constant initializer [2, -1].
    bool found = false;
    for (const auto& initializer : model->graph().initializer()) {
        if (initializer.name() != "newshape") continue;
        found = true;
        EXPECT_THAT(testing::elements_of<int64_t>(tensor_from_proto(initializer)), ElementsAre(2, -1));
    }
    EXPECT_TRUE(found);
    // Inputs of folded nodes that nothing reads anymore are gone.
    for (const auto& initializer : model->graph().initializer()) {
        EXPECT_NE(initializer.name(), "two");
        EXPECT_NE(initializer.name(), "idx0");
        EXPECT_NE(initializer.name(), "unused_w");
    }
}

TEST(FoldConstantsTest, ShapeFoldingWaitsForStaticShapes) {
    ModelBuilder builder = sample_builder(17, {3});  // W broadcasts, so the batch stays dynamic
    builder.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(0)->set_dim_param("batch");
    OnnxModel model = builder.build();
    fold_constants(*model);
    EXPECT_THAT(op_types(*model), ElementsAre("Add", "Relu", "Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Mul"));

    FoldConstantsOptions options;
    options.fold_shapes = false;
    OnnxModel static_model = sample_builder().build();
    fold_constants(*static_model, options);
    EXPECT_THAT(op_types(*static_model),
                ElementsAre("Add", "Relu", "Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Mul"));
}

TEST(FoldConstantsTest, GathersOfStaticDimsFoldFromDynamicShapes) {
    ModelBuilder builder = sample_builder(17, {3});
    builder.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(0)->set_dim_param("batch");
    // Gather dim 1 (static 3) instead of dim 0 (the batch): Reshape(b, [3, -1]).
    for (auto& initializer : *builder.proto().mutable_graph()->mutable_initializer())
        if (initializer.name() == "idx0") initializer = tensor_to_proto(int64s({}, {-1}), "idx0");
    OnnxModel model = builder.build();
    TensorMap feed;
    feed.set("x", testing::random_tensor({3, 3}, 8));  // (3, -1) must broadcast with the [3] scale
    const TensorMap expected = run_model(*model, feed);
    fold_constants(*model);
    EXPECT_THAT(op_types(*model), ElementsAre("Add", "Relu", "Reshape", "Mul"));
    expect_same_outputs(expected, run_model(*model, feed));
}

TEST(FoldConstantsTest, SizeThresholdKeepsLargeResults) {
    OnnxModel model = sample_builder().build();
    const TensorMap expected = run_model(*model, sample_feed());
    FoldConstantsOptions options;
    options.size_threshold = 11;  // the [3] float scale (12 bytes) and [2] int64 shape (16) stay unfolded
    fold_constants(*model, options);
    EXPECT_THAT(op_types(*model),
                ElementsAre("Constant", "Mul", "Add", "Relu", "Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Mul"));
    options.size_threshold = 16;  // now everything fits
    fold_constants(*model, options);
    EXPECT_THAT(op_types(*model), ElementsAre("Add", "Relu", "Reshape", "Mul"));
    expect_same_outputs(expected, run_model(*model, sample_feed()));
}

TEST(FoldConstantsTest, NewerOpsetUsesRuntimeShapes) {
    ModelBuilder builder = sample_builder(18);
    builder.ir_version(9);
    OnnxModel model = builder.build();
    const TensorMap expected = run_model(*model, sample_feed());
    fold_constants(*model);
    EXPECT_THAT(op_types(*model), ElementsAre("Add", "Relu", "Reshape", "Mul"));
    expect_same_outputs(expected, run_model(*model, sample_feed()));
}

TEST(FoldConstantsTest, RandomOpsAreNotFolded) {
    ModelBuilder builder(17);
    auto& random = builder.node("RandomUniform", {}, {"r"}, "random");
    set_attr(random, "shape", std::vector<int64_t>{2});
    builder.node("Relu", {"r"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    EXPECT_EQ(fold_constants(*model).nodes_folded, 0u);
    EXPECT_THAT(op_types(*model), ElementsAre("RandomUniform", "Relu"));
}

TEST(FoldConstantsTest, FailingNodeIsLeftOrRethrown) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.initializer("a", Tensor::from_doubles(DataType::kFloat32, {2}, {1, 2}));
    builder.initializer("bad_shape", int64s({1}, {5}));
    builder.node("Reshape", {"a", "bad_shape"}, {"c"}, "bad_reshape");
    builder.node("Add", {"x", "c"}, {"y"}, "add");
    builder.output("y", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    EXPECT_EQ(fold_constants(*model).nodes_folded, 0u);
    EXPECT_THAT(op_types(*model), ElementsAre("Reshape", "Add"));
    FoldConstantsOptions strict;
    strict.error_ok = false;
    EXPECT_THAT(error_message<PolygraphyException>([&] { fold_constants(*model, strict); }), HasSubstr("bad_reshape"));
}

TEST(FoldConstantsTest, RejectsZeroPasses) {
    OnnxModel model = sample_builder().build();
    FoldConstantsOptions options;
    options.num_passes = 0;
    EXPECT_THAT(error_message<PolygraphyException>([&] { fold_constants(*model, options); }),
                HasSubstr("Invalid number of constant folding passes: 0"));
}

// ---- cleanup / toposort -------------------------------------------------------------------------

TEST(CleanupTest, RemovesDeadNodesInitializersAndValueInfo) {
    ModelBuilder builder = sample_builder();
    builder.input("unused_input", DataType::kFloat32, Shape{1});
    auto* info = builder.proto().mutable_graph()->add_value_info();
    info->set_name("dead");
    info->mutable_type()->mutable_tensor_type()->set_elem_type(1);
    OnnxModel model = builder.build();
    TensorMap feed = sample_feed();
    feed.set("unused_input", testing::random_tensor({1}, 3));
    const TensorMap expected = run_model(*model, feed);

    CleanupStats stats = cleanup(*model);
    EXPECT_EQ(stats.nodes_removed, 1u);
    EXPECT_EQ(stats.initializers_removed, 1u);
    EXPECT_EQ(stats.inputs_removed, 0u);
    EXPECT_EQ(find_value_info(model->graph(), "dead"), nullptr);
    EXPECT_EQ(model->graph().input_size(), 2);
    expect_same_outputs(expected, run_model(*model, feed));

    CleanupOptions options;
    options.remove_unused_graph_inputs = true;
    stats = cleanup(*model, options);
    EXPECT_EQ(stats.inputs_removed, 1u);
    ASSERT_EQ(model->graph().input_size(), 1);
    EXPECT_EQ(model->graph().input(0).name(), "x");
}

TEST(CleanupTest, KeepsWhatSubgraphBodiesRead) {
    ModelBuilder builder(17);
    builder.input("cond", DataType::kBool, Shape{});
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"rx"}, "outer_relu");
    auto& node = builder.node("If", {"cond"}, {"y"}, "if");
    for (const std::string branch : {"then_branch", "else_branch"}) {
        auto* attribute = node.add_attribute();
        attribute->set_name(branch);
        attribute->set_type(onnx::AttributeProto::GRAPH);
        auto* body = attribute->mutable_g();
        body->set_name(branch);
        auto* inner = body->add_node();
        inner->set_op_type(branch == "then_branch" ? "Neg" : "Abs");
        inner->add_input("rx");
        inner->add_output(branch + "_out");
        auto* out = body->add_output();
        out->set_name(branch + "_out");
        out->mutable_type()->mutable_tensor_type()->set_elem_type(1);
    }
    builder.output("y", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    EXPECT_EQ(cleanup(*model).nodes_removed, 0u);
    EXPECT_THAT(op_types(*model), ElementsAre("Relu", "If"));

    // toposort puts the producer of an outer-scope read before the owner of the body.
    model->mutable_graph()->mutable_node()->SwapElements(0, 1);
    toposort(*model);
    EXPECT_THAT(op_types(*model), ElementsAre("Relu", "If"));
}

TEST(ToposortTest, SortsStablyAndKeepsOutputs) {
    OnnxModel model = sample_builder().build();
    const TensorMap expected = run_model(*model, sample_feed());
    auto* nodes = model->mutable_graph()->mutable_node();
    std::reverse(nodes->begin(), nodes->end());
    toposort(*model);
    const auto& graph = model->graph();
    std::unordered_map<std::string, int> position;
    for (int i = 0; i < graph.node_size(); ++i)
        for (const auto& output : graph.node(i).output()) position[output] = i;
    for (int i = 0; i < graph.node_size(); ++i)
        for (const auto& input : graph.node(i).input())
            if (position.contains(input)) {
                EXPECT_LT(position[input], i) << graph.node(i).name();
            }
    expect_same_outputs(expected, run_model(*model, sample_feed()));

    // Already sorted: unchanged.
    OnnxModel sorted = sample_builder().build();
    const auto before = op_types(*sorted);
    toposort(*sorted);
    EXPECT_EQ(op_types(*sorted), before);
}

TEST(ToposortTest, ReportsCycles) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Add", {"x", "c"}, {"a"}, "first");
    builder.node("Relu", {"a"}, {"b"}, "second");
    builder.node("Neg", {"b"}, {"c"}, "third");
    builder.output("c", DataType::kFloat32, Shape{1});
    OnnxModel model = builder.build();
    EXPECT_EQ(error_message<ModelError>([&] { toposort(*model); }),
              "Graph contains a cycle through nodes 'first' -> 'second' -> 'third' -> 'first'");
}

TEST(ToposortTest, ReportsDuplicateProducers) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1});
    builder.node("Relu", {"x"}, {"a"}, "one");
    builder.node("Neg", {"x"}, {"a"}, "two");
    builder.output("a", DataType::kFloat32, Shape{1});
    OnnxModel model = builder.build();
    EXPECT_EQ(error_message<ModelError>([&] { toposort(*model); }),
              "Tensor 'a' is produced by both node 'one' and node 'two'");
}

// ---- shape inference ----------------------------------------------------------------------------

TEST(InferShapesTest, UsesOnnxInferenceUpToOpset17) {
    OnnxModel model = sample_builder().build();
    EXPECT_EQ(infer_shapes(*model), ShapeInferenceMethod::kOnnx);
    const auto* info = find_value_info(model->graph(), "b");
    ASSERT_NE(info, nullptr);
    MetadataEntry entry = metadata_from_value_info(*info);
    EXPECT_EQ(entry.dtype, DataType::kFloat32);
    ASSERT_TRUE(entry.shape);
    EXPECT_EQ(dyn_shape_to_string(*entry.shape), "(2, 3)");
}

TEST(InferShapesTest, UsesTheRuntimeForNewerModels) {
    ModelBuilder builder = sample_builder(21);
    builder.ir_version(10);
    builder.proto().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    OnnxModel model = builder.build();
    EXPECT_EQ(infer_shapes(*model), ShapeInferenceMethod::kRuntime);
    for (const std::string name : {"a", "b", "s", "newshape", "r"}) {
        const auto* info = find_value_info(model->graph(), name);
        ASSERT_NE(info, nullptr) << name;
        EXPECT_TRUE(metadata_from_value_info(*info).shape) << name;
    }
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(*find_value_info(model->graph(), "r")).shape), "(2, 3)");
    EXPECT_EQ(metadata_from_value_info(*find_value_info(model->graph(), "s")).dtype, DataType::kInt64);
    // The graph output got its shape back; the output list is unchanged.
    ASSERT_EQ(model->graph().output_size(), 1);
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(model->graph().output(0)).shape), "(2, 3)");
    EXPECT_NO_THROW(run_model(*model, sample_feed()));
}

TEST(InferShapesTest, RuntimeInferenceNeedsStaticInputs) {
    ModelBuilder builder = sample_builder(21);
    builder.ir_version(10);
    builder.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(0)->set_dim_param("batch");
    OnnxModel model = builder.build();
    EXPECT_EQ(infer_shapes(*model), ShapeInferenceMethod::kNone);
    EXPECT_EQ(model->graph().value_info_size(), 0);
}

// libonnx 1.12 leaves a tensor untyped when it has no schema for its producer (Gelu at opset 17) or
// when the producer's inference fails (ConstantOfShape fed a float), and Shape's inference function
// then dereferences the null type (SIGSEGV; fuzzing finding F12). Its Conv inference indexes the
// weight's kernel by the data's rank (F15). Each pass must come back, with the types libonnx could
// infer elsewhere still there.
TEST(InferShapesTest, OperatorsReadingTensorsLibonnxCannotTypeDoNotCrashIt) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.node("Relu", {"x"}, {"r"}, "relu");
    builder.node("Gelu", {"r"}, {"g"}, "gelu");
    builder.node("Shape", {"g"}, {"s"}, "shape_of_gelu");
    builder.node("ConstantOfShape", {"r"}, {"c"}, "constant_of_float_shape");
    builder.node("Shape", {"c"}, {"t"}, "shape_of_constant");
    builder.initializer("w", Tensor(DataType::kFloat32, Shape{2, 2, 3, 3}));
    builder.node("Conv", {"x", "w"}, {"conv"}, "conv_of_rank_2_data");
    builder.output("conv", DataType::kFloat32, Shape{}, false);
    builder.output("s", DataType::kInt64, Shape{}, false);
    builder.output("t", DataType::kInt64, Shape{}, false);
    builder.output("r", DataType::kFloat32, Shape{}, false);
    OnnxModel model = builder.build();

    TensorMetadata outputs = infer_output_metadata(*model, {});
    ASSERT_EQ(outputs.size(), 4u);
    ASSERT_TRUE(outputs.find("r")->shape);
    EXPECT_EQ(dyn_shape_to_string(*outputs.find("r")->shape), "(2, 3)");
    EXPECT_FALSE(outputs.find("s")->shape);  // nothing to infer it from

    onnx::ModelProto inferred = *model;
    infer_value_info(inferred);
    EXPECT_EQ(find_value_info(inferred.graph(), "g"), nullptr);

    EXPECT_EQ(infer_shapes(*model), ShapeInferenceMethod::kOnnx);
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(model->graph().output(3)).shape), "(2, 3)");
}

TEST(InferShapesTest, OverrideInputShapesReinfers) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3)});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Neg", {"a"}, {"y"}, "neg");
    builder.output("y", DataType::kFloat32, DynShape{Dim::named("batch"), Dim::fixed(3)});
    OnnxModel model = builder.build();
    OrderedMap<DynShape> shapes;
    shapes.set("x", DynShape{Dim::fixed(4), Dim::fixed(3)});
    override_input_shapes(*model, shapes);
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(model->graph().input(0)).shape), "(4, 3)");
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(*find_value_info(model->graph(), "a")).shape), "(4, 3)");
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(model->graph().output(0)).shape), "(4, 3)");

    OrderedMap<DynShape> wrong_rank;
    wrong_rank.set("x", DynShape{Dim::fixed(12)});
    EXPECT_EQ(error_message<PolygraphyException>([&] { override_input_shapes(*model, wrong_rank); }),
              "Cannot override the shape of input 'x' with (12,): it has rank 2, not 1\nNote: Declared shape: (4, 3)");
    OrderedMap<DynShape> unknown;
    unknown.set("xx", DynShape{Dim::fixed(1), Dim::fixed(3)});
    EXPECT_THAT(error_message<PolygraphyException>([&] { override_input_shapes(*model, unknown); }),
                HasSubstr("Cannot override the shape of 'xx': it is not an input of the model. Did you mean 'x'?"));
}

// ---- extract ------------------------------------------------------------------------------------

TEST(ExtractSubgraphTest, KeepsOnlyNeededNodesAndRunsLikeTheOriginal) {
    OnnxModel model = sample_builder().build();
    OnnxModel sub = extract_subgraph(*model, {{"a", std::nullopt, std::nullopt}}, {{"r", std::nullopt, std::nullopt}});
    EXPECT_THAT(op_types(*sub), ElementsAre("Relu", "Shape", "Gather", "Unsqueeze", "Concat", "Reshape"));
    std::vector<std::string> initializers;
    for (const auto& initializer : sub->graph().initializer()) initializers.push_back(initializer.name());
    EXPECT_THAT(initializers, ElementsAre("idx0", "axes0", "minus1"));
    ASSERT_EQ(sub->graph().input_size(), 1);
    EXPECT_EQ(metadata_from_value_info(sub->graph().input(0)).dtype, DataType::kFloat32);  // inferred
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(sub->graph().output(0)).shape), "(2, 3)");
    EXPECT_EQ(sub->opset_import(0).version(), 17);

    // Same values as the original's intermediate tensors.
    OnnxModel marked = modify_outputs(sample_builder().build(), {"a", "r"});
    const TensorMap original = run_model(*marked, sample_feed());
    TensorMap feed;
    feed.set("a", original.at("a"));
    const TensorMap extracted = run_model(*sub, feed);
    EXPECT_TRUE(extracted.at("r").equals(original.at("r")));
    // The source model is untouched.
    EXPECT_EQ(model->graph().node_size(), 11);
}

TEST(ExtractSubgraphTest, GivenTypesAndShapesAreUsed) {
    OnnxModel model = sample_builder().build();
    OnnxModel sub = extract_subgraph(*model, {{"b", DataType::kFloat32, DynShape{Dim::named("n"), Dim::fixed(3)}}},
                                     {{"r", DataType::kFloat32, std::nullopt}});
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(sub->graph().input(0)).shape), "('n', 3)");
    TensorMap feed;
    feed.set("b", testing::random_tensor({5, 3}, 3));
    EXPECT_EQ(run_model(*sub, feed).at("r").shape(), (Shape{5, 3}));
}

TEST(ExtractSubgraphTest, InitializerInputBecomesARealInput) {
    OnnxModel model = sample_builder().build();
    OnnxModel sub = extract_subgraph(*model, {{"x", std::nullopt, std::nullopt}, {"W", std::nullopt, std::nullopt}},
                                     {{"a", std::nullopt, std::nullopt}});
    EXPECT_EQ(sub->graph().initializer_size(), 0);
    ASSERT_EQ(sub->graph().input_size(), 2);
    EXPECT_EQ(dyn_shape_to_string(*metadata_from_value_info(sub->graph().input(1)).shape), "(2, 3)");
}

TEST(ExtractSubgraphTest, RejectsUnknownTensors) {
    OnnxModel model = sample_builder().build();
    EXPECT_THAT(error_message<PolygraphyException>(
                    [&] { extract_subgraph(*model, {{"relu_out", std::nullopt, std::nullopt}}, {{"r", {}, {}}}); }),
                HasSubstr("Tensor 'relu_out' given as a subgraph input does not exist in the model"));
    EXPECT_EQ(error_message<PolygraphyException>([&] { extract_subgraph(*model, {{"a", {}, {}}}, {{"rr", {}, {}}}); }),
              "Tensor 'rr' given as a subgraph output does not exist in the model. Did you mean 'r'?");
}

TEST(ExtractSubgraphTest, RejectsInputsThatDoNotCutTheGraph) {
    ModelBuilder builder(17);
    builder.input("x1", DataType::kFloat32, Shape{2});
    builder.input("x2", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x1"}, {"r1"}, "relu");
    builder.node("Add", {"r1", "x2"}, {"s"}, "add");
    builder.output("s", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    EXPECT_EQ(error_message<ModelError>([&] { extract_subgraph(*model, {{"x1", {}, {}}}, {{"s", {}, {}}}); }),
              "The subgraph inputs do not cut the graph: node 'add' (Add) needs graph input 'x2', which is not among "
              "the subgraph inputs");
    EXPECT_THAT(error_message<ModelError>([&] { extract_subgraph(*model, {{"r1", {}, {}}}, {{"x2", {}, {}}}); }),
                HasSubstr("output 'x2' is a graph input that is not among the subgraph inputs"));
}

// ---- external data ------------------------------------------------------------------------------

TEST(ExternalDataTest, SavesLargeTensorsOutsideAndLoadsBack) {
    TempDir dir;
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{16, 16});
    builder.initializer("big", testing::random_tensor({16, 16}, 5));
    builder.node("Add", {"x", "big"}, {"a"}, "add");
    builder.node("Mul", {"a", "small"}, {"y"}, "mul");
    builder.initializer("small", testing::random_tensor({16}, 6));
    builder.output("y", DataType::kFloat32, Shape{16, 16});
    OnnxModel model = builder.build();
    const std::string path = dir.file("model.onnx");
    save_onnx_with_external_data(*model, path, {"weights.bin", 100});
    EXPECT_TRUE(fs::exists(dir.file("weights.bin")));
    EXPECT_EQ(fs::file_size(dir.file("weights.bin")), 16u * 16u * 4u);
    // The model passed in still holds its data.
    EXPECT_EQ(model->graph().initializer(0).data_location(), onnx::TensorProto::DEFAULT);

    OnnxModel structure = onnx_from_path(path, std::nullopt, true);
    EXPECT_EQ(structure->graph().initializer(0).data_location(), onnx::TensorProto::EXTERNAL);
    EXPECT_EQ(structure->graph().initializer(1).data_location(), onnx::TensorProto::DEFAULT);

    TensorMap feed;
    feed.set("x", testing::random_tensor({16, 16}, 9));
    expect_same_outputs(run_model(*model, feed), run_model(*onnx_from_path(path), feed));

    EXPECT_THAT(error_message<PolygraphyException>(
                    [&] { save_onnx_with_external_data(*model, dir.file("m2.onnx"), {"../escape.bin", 0}); }),
                HasSubstr("must be relative to the model's folder"));
    EXPECT_FALSE(fs::exists(dir.file("m2.onnx")));
}

}  // namespace
}  // namespace polygraphy

namespace polygraphy {
namespace {

// Its Casts take an int `to`, which Cast does from opset 6. A model importing the default domain
// twice ("" at 17, "ai.onnx" at 1: fuzzing) is read at its last import everywhere, so the
// conversion refuses it rather than writing Casts that the node check then refuses.
TEST(ConvertToFp16Test, RefusesOpsetsBelow6AtTheLastImportOfTheDomain) {
    ModelBuilder builder(17);
    builder.opset_import("ai.onnx", 1);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Relu", {"x"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    EXPECT_THAT(error_message<UnsupportedError>([&] { convert_to_fp16(*model); }),
                HasSubstr("needs ai.onnx opset 6 or later (for Cast), but the model imports opset 1"));
}

TEST(ConvertToFp16Test, BlockedOpsStayInFloat32WithCasts) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2, 8});
    builder.initializer("w", testing::random_tensor({2, 8}, 4));
    builder.initializer("k", int64s({1}, {3}));
    builder.node("Mul", {"x", "w"}, {"m"}, "mul");
    builder.node("TopK", {"m", "k"}, {"values", "indices"}, "topk");
    builder.node("Relu", {"values"}, {"y"}, "relu");
    builder.output("y", DataType::kFloat32, Shape{2, 3});
    builder.output("indices", DataType::kInt64, Shape{2, 3});
    OnnxModel model = builder.build();
    TensorMap feed;
    feed.set("x", testing::random_tensor({2, 8}, 5));
    const TensorMap expected = run_model(*model, feed);

    Fp16Stats stats = convert_to_fp16(*model);
    EXPECT_EQ(stats.initializers_converted, 1u);
    EXPECT_EQ(stats.nodes_in_fp32, 1u);
    // x -> fp16 for Mul, m -> fp32 for TopK, values -> fp16 for Relu, y back to fp32.
    EXPECT_EQ(stats.casts_inserted, 4u);
    EXPECT_THAT(op_types(*model), ElementsAre("Cast", "Mul", "Cast", "TopK", "Cast", "Relu", "Cast"));
    EXPECT_EQ(model->graph().initializer(0).data_type(), onnx::TensorProto::FLOAT16);
    EXPECT_EQ(model->graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);

    const TensorMap actual = run_model(*model, feed);
    EXPECT_TRUE(actual.at("indices").equals(expected.at("indices")));
    const Tensor& y = actual.at("y");
    ASSERT_EQ(y.dtype(), DataType::kFloat32);
    for (int64_t i = 0; i < y.numel(); ++i)
        EXPECT_NEAR(y.data_as<float>()[i], expected.at("y").data_as<float>()[i], 1e-2);

    // Without keeping I/O types the graph input and output become float16.
    OnnxModel half_io = builder.build();
    convert_to_fp16(*half_io, Fp16Options{.keep_io_types = false});
    EXPECT_EQ(half_io->graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);
    EXPECT_EQ(half_io->graph().output(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);
    TensorMap half_feed;
    half_feed.set("x", feed.at("x").cast(DataType::kFloat16));
    EXPECT_EQ(run_model(*half_io, half_feed).at("y").dtype(), DataType::kFloat16);
}

TEST(ConvertToFp16Test, BlockedNodesKeepFloat32WithOneCastPerCrossing) {
    // x -> Relu -> a -> Sigmoid -> b -> Neg -> y, and Tanh(a) -> z: Sigmoid and Neg blocked by name.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{3});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Sigmoid", {"a"}, {"b"}, "sigmoid");
    builder.node("Neg", {"b"}, {"y"}, "neg");
    builder.node("Tanh", {"a"}, {"z"}, "tanh");
    builder.output("y", DataType::kFloat32, Shape{3}).output("z", DataType::kFloat32, Shape{3});
    OnnxModel model = builder.build();
    const Fp16Stats stats = convert_to_fp16(*model, Fp16Options{.node_block_list = {"sigmoid", "neg"}});
    EXPECT_EQ(stats.nodes_in_fp32, 2u);
    // x to fp16 for Relu; a back to fp32 for Sigmoid (Neg reads Sigmoid's float32 b directly); z to fp32.
    EXPECT_EQ(stats.casts_inserted, 3u);
    EXPECT_THAT(op_types(*model), ElementsAre("Cast", "Relu", "Cast", "Sigmoid", "Neg", "Tanh", "Cast"));
    for (const auto& node : model->graph().node())
        if (node.name() == "neg") {
            EXPECT_EQ(node.input(0), "b");
        }

    // bfloat16: the same, with bfloat16 Casts.
    OnnxModel bf16 = builder.build();
    convert_to_fp16(*bf16, Fp16Options{.node_block_list = {"sigmoid"}, .target = DataType::kBFloat16});
    EXPECT_EQ(bf16->graph().node(0).attribute(0).i(), onnx::TensorProto::BFLOAT16);
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {3}, {-1, 0.5, 2}));
    const TensorMap expected = run_model(*builder.build(), feed), actual = run_model(*bf16, feed);
    for (const char* name : {"y", "z"})
        for (int64_t i = 0; i < 3; ++i)
            EXPECT_NEAR(actual.at(name).data_as<float>()[i], expected.at(name).data_as<float>()[i], 2e-2);

    // A block list naming no node is refused, naming it.
    OnnxModel refused = builder.build();
    EXPECT_THAT(testing::error_message<UsageError>([&] {
                    convert_to_fp16(*refused, Fp16Options{.node_block_list = {"sigmoid", "/missing"}});
                }),
                HasSubstr("The node block list names '/missing', which no node of the model has"));
}

TEST(ConvertToFp16Test, CastsThatDoNothingOrCancelAreRemoved) {
    // A float32 model with the Casts exporters write: Cast(to=float) of a float tensor, and a Cast to
    // float16 and back to float32. Once the tensors are fp16, all three cast fp16 to fp16.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    set_attr(builder.node("Cast", {"a"}, {"a_float"}, "cast_float"), "to", int64_t{onnx::TensorProto::FLOAT});
    builder.node("Sigmoid", {"a_float"}, {"b"}, "sigmoid");
    set_attr(builder.node("Cast", {"b"}, {"b_half"}, "cast_half"), "to", int64_t{onnx::TensorProto::FLOAT16});
    set_attr(builder.node("Cast", {"b_half"}, {"b_back"}, "cast_back"), "to", int64_t{onnx::TensorProto::FLOAT});
    builder.node("Neg", {"b_back"}, {"y"}, "neg");
    builder.output("y", DataType::kFloat32, Shape{4});
    OnnxModel model = builder.build();
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {4}, {-1, 0.25, 1, 3}));
    const TensorMap expected = run_model(*model, feed);
    const Fp16Stats stats = convert_to_fp16(*model);
    EXPECT_EQ(stats.casts_removed, 3u);
    EXPECT_THAT(op_types(*model), ElementsAre("Cast", "Relu", "Sigmoid", "Neg", "Cast"));
    const TensorMap actual = run_model(*model, feed);
    for (int64_t i = 0; i < 4; ++i)
        EXPECT_NEAR(actual.at("y").data_as<float>()[i], expected.at("y").data_as<float>()[i], 2e-3);

    // With Sigmoid blocked, one Cast is left per crossing: the original Casts all go.
    OnnxModel blocked = builder.build();
    convert_to_fp16(*blocked, Fp16Options{.node_block_list = {"sigmoid"}});
    std::size_t casts = 0;
    for (const auto& node : blocked->graph().node()) casts += node.op_type() == "Cast";
    EXPECT_EQ(casts, 4u);  // x to fp16, a to fp32 for Sigmoid, b to fp16, y back to fp32
    for (const auto& node : blocked->graph().node())
        EXPECT_THAT(node.name(), ::testing::Not(::testing::AnyOf("cast_float", "cast_half", "cast_back")));
}

TEST(ConvertToFp16Test, Float64IsAReferenceTruerThanFloat32) {
    // y = (x + 1) - 1: float32 loses x = 1e-8 entirely, float64 keeps it. A Cast(to=float) computes in
    // float64 too; a QuantizeLinear/DequantizeLinear pair stays in float32.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.initializer("one", Tensor::from_doubles(DataType::kFloat32, {}, {1.0}));
    builder.initializer("scale", Tensor::from_doubles(DataType::kFloat32, {}, {0.5}));
    builder.node("Add", {"x", "one"}, {"shifted"}, "add");
    set_attr(builder.node("Cast", {"shifted"}, {"cast"}, "cast"), "to", int64_t{onnx::TensorProto::FLOAT});
    builder.node("Sub", {"cast", "one"}, {"y"}, "sub");
    builder.node("QuantizeLinear", {"x", "scale"}, {"q"}, "quantize");
    builder.node("DequantizeLinear", {"q", "scale"}, {"dq"}, "dequantize");
    builder.output("y", DataType::kFloat32, Shape{2}).output("dq", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {1e-8, 3.0}));
    EXPECT_EQ(run_model(*model, feed).at("y").data_as<float>()[0], 0.0f);
    const Fp16Stats stats = convert_to_fp16(*model, Fp16Options{.target = DataType::kFloat64});
    EXPECT_EQ(stats.nodes_in_fp32, 2u);  // the quantization pair
    for (const auto& node : model->graph().node())
        if (node.name() == "cast") {
            EXPECT_EQ(node.attribute(0).i(), onnx::TensorProto::DOUBLE);
        }
    const TensorMap outputs = run_model(*model, feed);
    ASSERT_EQ(outputs.at("y").dtype(), DataType::kFloat32);  // graph outputs keep their type
    EXPECT_FLOAT_EQ(outputs.at("y").data_as<float>()[0], 1e-8f);
    EXPECT_FLOAT_EQ(outputs.at("dq").data_as<float>()[1], 3.0f);
}

TEST(ConvertToFp16Test, BlockListFilesRoundTripInOnnxconverterCommonsShape) {
    testing::TempDir dir;
    save_fp16_block_lists({{"/a/MatMul", "/b/Add"}, {"Resize"}}, dir.file("lists.json"));
    EXPECT_EQ(read_file(dir.file("lists.json")),
              "{\n    \"node_block_list\": [\n        \"/a/MatMul\",\n        \"/b/Add\"\n    ],\n    "
              "\"op_block_list\": [\n        \"Resize\"\n    ]\n}\n");
    const Fp16BlockLists lists = read_fp16_block_lists(dir.file("lists.json"));
    EXPECT_THAT(lists.node_block_list, ElementsAre("/a/MatMul", "/b/Add"));
    EXPECT_THAT(lists.op_block_list, ElementsAre("Resize"));
    write_file_atomically(dir.file("bad.json"), "{\"node_block_list\": \"/a/MatMul\"}");
    EXPECT_THAT(testing::error_message<FormatError>([&] { read_fp16_block_lists(dir.file("bad.json")); }),
                HasSubstr("bad.json"));
}

}  // namespace
}  // namespace polygraphy

namespace polygraphy {
namespace {

TEST(ExtractSubgraphTest, MultiOutputNodeProducingAnInputKeepsOneDefinition) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.initializer("split", int64s({2}, {2, 2}));
    builder.node("Split", {"x", "split"}, {"p", "q"}, "split");
    builder.node("Add", {"p", "q"}, {"y"}, "add");
    builder.output("y", DataType::kFloat32, Shape{2});
    OnnxModel model = builder.build();
    OnnxModel sub = extract_subgraph(*model, {{"x", {}, {}}, {"q", {}, {}}}, {{"y", {}, {}}});
    EXPECT_THAT(op_types(*sub), ElementsAre("Split", "Add"));
    EXPECT_EQ(sub->graph().node(0).output(1), "q_polygraphy_extract_unused");
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {4}, {1, 2, 3, 4}));
    feed.set("q", Tensor::from_doubles(DataType::kFloat32, {2}, {10, 20}));
    EXPECT_THAT(testing::elements_of<float>(run_model(*sub, feed).at("y")), ElementsAre(11, 22));
}

}  // namespace
}  // namespace polygraphy

namespace polygraphy {
namespace {

// x -> Relu -> a -> Sigmoid -> b -> Neg -> y
OnnxModel chain_model() {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{3});
    builder.node("Relu", {"x"}, {"a"}, "relu");
    builder.node("Sigmoid", {"a"}, {"b"}, "sigmoid");
    builder.node("Neg", {"b"}, {"y"}, "neg");
    builder.output("y", DataType::kFloat32, Shape{3});
    return builder.build();
}

TEST(InsertNodeTest, ReplacesTheSubgraphBetweenItsInputsAndOutputs) {
    OnnxModel model = chain_model();
    insert_node(*model, make_node("Abs", {"x"}, {"b"}, "abs"));
    // Relu and Sigmoid computed b from x: the new node replaces them; Neg now reads its output.
    EXPECT_THAT(op_types(*model), ElementsAre("Abs", "Neg"));
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {3}, {-2, 0, 3}));
    EXPECT_THAT(testing::elements_of<float>(run_model(*model, feed).at("y")), ElementsAre(-2, 0, -3));
}

TEST(InsertNodeTest, AnOutputThatIsAlsoAnInputBecomesANewTensor) {
    OnnxModel model = chain_model();
    insert_node(*model, make_node("Abs", {"a"}, {"a"}, "abs"));
    // Abs reads a and writes a new tensor that Sigmoid now reads.
    EXPECT_THAT(op_types(*model), ElementsAre("Relu", "Abs", "Sigmoid", "Neg"));
    EXPECT_EQ(model->graph().node(1).output(0), "a_polygraphy_surgeon_insert_output");
    EXPECT_EQ(model->graph().node(2).input(0), "a_polygraphy_surgeon_insert_output");

    // A graph output keeps its name: the tensor the node reads is renamed instead.
    OnnxModel last = chain_model();
    insert_node(*last, make_node("Abs", {"y"}, {"y"}, "abs"));
    EXPECT_THAT(op_types(*last), ElementsAre("Relu", "Sigmoid", "Neg", "Abs"));
    EXPECT_EQ(last->graph().node(2).output(0), "y_polygraphy_surgeon_insert_output");
    EXPECT_EQ(last->graph().node(3).input(0), "y_polygraphy_surgeon_insert_output");
    EXPECT_EQ(last->graph().node(3).output(0), "y");
}

TEST(InsertNodeTest, UnknownTensorsAreNamedWithAHint) {
    OnnxModel model = chain_model();
    EXPECT_EQ(error_message<PolygraphyException>([&] { insert_node(*model, make_node("Abs", {"aa"}, {"b"}, "")); }),
              "Tensor: aa does not exist in the model. Did you mean 'a'?");
    EXPECT_THAT(op_types(*model), ElementsAre("Relu", "Sigmoid", "Neg"));  // unchanged
}

}  // namespace
}  // namespace polygraphy
