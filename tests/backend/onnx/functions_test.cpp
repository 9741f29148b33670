// ONNX local functions: expansion (names, attribute references, defaults, nested calls, overloads,
// opset imports), and every pass that runs models seeing through them (the built-in runtime,
// constant folding, capability, lint, mark all). Bad input: recursion and missing functions.
#include "polygraphy/backend/onnx/functions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/lint.h"
#include "polygraphy/backend/ref/evaluator.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "test_helpers.h"

namespace polygraphy {
namespace {

using testing::elements_of;
using ::testing::ElementsAre;
using testing::error_message;
using ::testing::HasSubstr;
using testing::ModelBuilder;
using testing::set_attr;

// Protobuf field numbers of IR 9/10 fields that this build's ONNX headers (IR 8) lack.
constexpr int kNodeOverload = 8;
constexpr int kFunctionAttributeProto = 11;
constexpr int kFunctionOverload = 13;

onnx::FunctionProto& add_function(ModelBuilder& builder, const std::string& name, std::vector<std::string> inputs,
                                  std::vector<std::string> outputs, int64_t onnx_opset = 17) {
    onnx::FunctionProto& function = *builder.proto().add_functions();
    function.set_name(name);
    function.set_domain("custom");
    for (auto& input : inputs) function.add_input(input);
    for (auto& output : outputs) function.add_output(output);
    auto* opset = function.add_opset_import();
    opset->set_domain("");
    opset->set_version(onnx_opset);
    return function;
}

onnx::NodeProto& add_body_node(onnx::FunctionProto& function, const std::string& op_type,
                               std::vector<std::string> inputs, std::vector<std::string> outputs,
                               const std::string& domain = "") {
    onnx::NodeProto& node = *function.add_node();
    node.set_op_type(op_type);
    node.set_domain(domain);
    for (auto& input : inputs) node.add_input(input);
    for (auto& output : outputs) node.add_output(output);
    return node;
}

// AddRelu(a, b) = Relu(a + b), called twice: x + y, then with the first result.
ModelBuilder add_relu_model() {
    ModelBuilder builder(17, "g");
    builder.opset_import("custom", 1);
    builder.input("x", DataType::kFloat32, Shape{4});
    builder.input("y", DataType::kFloat32, Shape{4});
    builder.node("AddRelu", {"x", "y"}, {"first"}, "call0", "custom");
    builder.node("AddRelu", {"first", "x"}, {"second"}, "", "custom");
    builder.output("second", DataType::kFloat32, Shape{4});
    onnx::FunctionProto& function = add_function(builder, "AddRelu", {"a", "b"}, {"c"});
    add_body_node(function, "Add", {"a", "b"}, {"sum"}).set_name("add");
    add_body_node(function, "Relu", {"sum"}, {"c"});
    return builder;
}

TensorMap run_ref(const onnx::ModelProto& model, const TensorMap& feed) {
    return ref::session_from_onnx(model)->run(feed);
}

TensorMap add_relu_feed() {
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {4}, {1, -2, 3, -4}));
    feed.set("y", Tensor::from_doubles(DataType::kFloat32, {4}, {-2, 1, 1, 1}));
    return feed;
}

std::vector<std::string> names_of(const std::vector<ExpandedNode>& nodes) {
    std::vector<std::string> names;
    for (const auto& node : nodes) names.push_back(node.node.name() + ":" + node.node.output(0));
    return names;
}

TEST(LocalFunctions, CallsExpandUnderTheDocumentedNames) {
    const OnnxModel model = add_relu_model().build();
    EXPECT_TRUE(calls_local_functions(*model));
    const std::vector<ExpandedNode> nodes = expand_function_calls(*model, model->graph());
    // The second call is unnamed: "<op_type>_<index>".
    EXPECT_THAT(names_of(nodes), ElementsAre("call0/add:call0/sum", "call0/Relu_1:first", "AddRelu_1/add:AddRelu_1/sum",
                                             "AddRelu_1/Relu_1:second"));
    EXPECT_EQ(nodes[0].node.input(0), "x");
    EXPECT_EQ(nodes[2].node.input(0), "first");
    EXPECT_EQ(nodes[0].function, &model->functions(0));
}

TEST(LocalFunctions, TheBuiltInRuntimeRunsThem) {
    const OnnxModel model = add_relu_model().build();
    const TensorMap out = run_ref(*model, add_relu_feed());
    // first = relu(x + y) = [0, 0, 4, 0]; second = relu(first + x) = [1, 0, 7, 0]
    EXPECT_THAT(elements_of<float>(out.at("second")), ElementsAre(1, 0, 7, 0));
}

TEST(LocalFunctions, MarkAllReachesTheTensorsInsideAFunction) {
    OnnxModel model = add_relu_model().build();
    model = modify_outputs(model, kMarkAll);
    EXPECT_EQ(model->functions_size(), 0);
    const TensorMap out = run_ref(*model, add_relu_feed());
    EXPECT_THAT(elements_of<float>(out.at("call0/sum")), ElementsAre(-1, -1, 4, -3));
    EXPECT_THAT(elements_of<float>(out.at("AddRelu_1/sum")), ElementsAre(1, -2, 7, -4));
    EXPECT_THAT(elements_of<float>(out.at("second")), ElementsAre(1, 0, 7, 0));
}

// LeakyRelu whose alpha refers to the caller's attribute "slope", with a default of 0.5 (IR 9).
ModelBuilder leaky_model(bool with_default) {
    ModelBuilder builder(17, "g");
    builder.opset_import("custom", 1);
    builder.input("x", DataType::kFloat32, Shape{2});
    onnx::NodeProto& given = builder.node("Leaky", {"x"}, {"given"}, "given", "custom");
    set_attr(given, "slope", 0.25f);
    builder.node("Leaky", {"x"}, {"defaulted"}, "defaulted", "custom");
    builder.output("given", DataType::kFloat32, Shape{2});
    builder.output("defaulted", DataType::kFloat32, Shape{2});
    onnx::FunctionProto& function = add_function(builder, "Leaky", {"a"}, {"b"});
    function.add_attribute("slope");
    onnx::NodeProto& body = add_body_node(function, "LeakyRelu", {"a"}, {"b"});
    onnx::AttributeProto& alpha = *body.add_attribute();
    alpha.set_name("alpha");
    alpha.set_type(onnx::AttributeProto::FLOAT);
    alpha.set_ref_attr_name("slope");
    if (with_default) {
        onnx::AttributeProto fallback;
        fallback.set_name("slope");
        fallback.set_type(onnx::AttributeProto::FLOAT);
        fallback.set_f(0.5f);
        function.mutable_unknown_fields()->AddLengthDelimited(kFunctionAttributeProto, fallback.SerializeAsString());
    }
    return builder;
}

TEST(LocalFunctions, AttributeReferencesTakeTheCallsValueThenTheDefault) {
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {-4, 2}));
    const TensorMap out = run_ref(*leaky_model(true).build(), feed);
    EXPECT_THAT(elements_of<float>(out.at("given")), ElementsAre(-1, 2));
    EXPECT_THAT(elements_of<float>(out.at("defaulted")), ElementsAre(-2, 2));
    // Neither given nor defaulted: the attribute is absent, so LeakyRelu's own default (0.01) applies.
    const TensorMap plain = run_ref(*leaky_model(false).build(), feed);
    EXPECT_THAT(elements_of<float>(plain.at("defaulted")), ElementsAre(-0.04f, 2));
}

TEST(LocalFunctions, NestedCallsAreNamedByBothCalls) {
    ModelBuilder builder(17, "g");
    builder.opset_import("custom", 1);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Outer", {"x"}, {"y"}, "outer", "custom");
    builder.output("y", DataType::kFloat32, Shape{2});
    onnx::FunctionProto& inner = add_function(builder, "Inner", {"a"}, {"b"});
    add_body_node(inner, "Neg", {"a"}, {"negated"}).set_name("neg");
    add_body_node(inner, "Abs", {"negated"}, {"b"}).set_name("abs");
    onnx::FunctionProto& outer = add_function(builder, "Outer", {"p"}, {"q"});
    add_body_node(outer, "Inner", {"p"}, {"mid"}, "custom").set_name("inner");
    add_body_node(outer, "Add", {"mid", "p"}, {"q"}).set_name("add");
    const OnnxModel model = builder.build();
    EXPECT_THAT(names_of(expand_function_calls(*model, model->graph())),
                ElementsAre("outer/inner/neg:outer/inner/negated", "outer/inner/abs:outer/mid", "outer/add:y"));
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {-3, 5}));
    const OnnxModel marked = modify_outputs(builder.build(), kMarkAll);
    const TensorMap out = run_ref(*marked, feed);
    EXPECT_THAT(elements_of<float>(out.at("outer/inner/negated")), ElementsAre(3, -5));
    EXPECT_THAT(elements_of<float>(out.at("y")), ElementsAre(0, 10));
}

TEST(LocalFunctions, OverloadsAreCalledByTheNodesOverload) {
    ModelBuilder builder(17, "g");
    builder.opset_import("custom", 1);
    builder.input("x", DataType::kFloat32, Shape{2});
    builder.node("Op", {"x"}, {"negated"}, "n", "custom")
        .mutable_unknown_fields()
        ->AddLengthDelimited(kNodeOverload, "neg");
    builder.node("Op", {"x"}, {"absolute"}, "a", "custom")
        .mutable_unknown_fields()
        ->AddLengthDelimited(kNodeOverload, "abs");
    builder.output("negated", DataType::kFloat32, Shape{2});
    builder.output("absolute", DataType::kFloat32, Shape{2});
    for (const std::string op : {"Neg", "Abs"}) {
        onnx::FunctionProto& function = add_function(builder, "Op", {"a"}, {"b"});
        function.mutable_unknown_fields()->AddLengthDelimited(kFunctionOverload, op == "Neg" ? "neg" : "abs");
        add_body_node(function, op, {"a"}, {"b"});
    }
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {2}, {-3, 5}));
    const TensorMap out = run_ref(*builder.build(), feed);
    EXPECT_THAT(elements_of<float>(out.at("negated")), ElementsAre(3, -5));
    EXPECT_THAT(elements_of<float>(out.at("absolute")), ElementsAre(3, 5));

    builder.node("Op", {"x"}, {"z"}, "unknown", "custom")
        .mutable_unknown_fields()
        ->AddLengthDelimited(kNodeOverload, "exp");
    EXPECT_EQ(error_message<ModelError>([&] { run_ref(*builder.build(), feed); }),
              "Node 'unknown' calls local function 'custom.Op (overload 'exp')', which the model does not define");
}

// ReduceSum takes its axes as an input from opset 13 and as an attribute before: a body written for
// opset 13 must run with opset 13 in a model that imports opset 11.
ModelBuilder model_with_newer_function_opset() {
    ModelBuilder builder(11, "g");
    builder.opset_import("custom", 1);
    builder.input("x", DataType::kFloat32, Shape{2, 3});
    builder.node("SumRows", {"x"}, {"y"}, "call", "custom");
    builder.output("y", DataType::kFloat32, Shape{2});
    onnx::FunctionProto& function = add_function(builder, "SumRows", {"a"}, {"b"}, 13);
    set_attr(add_body_node(function, "Constant", {}, {"axes"}), "value",
             Tensor::from_doubles(DataType::kInt64, {1}, {1}));
    set_attr(add_body_node(function, "ReduceSum", {"a", "axes"}, {"b"}), "keepdims", int64_t{0});
    return builder;
}

TEST(LocalFunctions, BodiesRunWithTheirFunctionsOpsetImports) {
    TensorMap feed;
    feed.set("x", Tensor::from_doubles(DataType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6}));
    const TensorMap out = run_ref(*model_with_newer_function_opset().build(), feed);
    EXPECT_THAT(elements_of<float>(out.at("y")), ElementsAre(6, 15));
}

TEST(LocalFunctions, InliningRefusesConflictingOpsetImportsAndLeavesTheModelUnchanged) {
    OnnxModel model = model_with_newer_function_opset().build();
    const std::string before = model->SerializeAsString();
    EXPECT_EQ(error_message<UnsupportedError>([&] { inline_local_functions(*model); }),
              "Cannot inline local function 'custom.SumRows': it imports opset 13 of domain 'ai.onnx', but the model "
              "imports opset 11");
    EXPECT_EQ(model->SerializeAsString(), before);
}

// Fuzzing F19: inlining would import the body's ai.onnx 13 for the whole model, and the graph's own
// Relu, run at opset 1 without an import, would change meaning.
TEST(LocalFunctions, InliningRefusesADomainTheModelLeavesUnimportedButUses) {
    ModelBuilder builder = model_with_newer_function_opset();
    builder.proto().clear_opset_import();
    builder.opset_import("custom", 1);
    builder.node("Relu", {"x"}, {"r"}, "own_relu");
    builder.output("r", DataType::kFloat32, Shape{2, 3});
    OnnxModel model = builder.build();
    const std::string before = model->SerializeAsString();
    EXPECT_EQ(error_message<UnsupportedError>([&] { inline_local_functions(*model); }),
              "Cannot inline local function 'custom.SumRows': it imports opset 13 of domain 'ai.onnx', which the "
              "model does not import although its graph has nodes of that domain (run at opset 1)");
    EXPECT_EQ(model->SerializeAsString(), before);

    // Without nodes of its own in that domain, the graph takes the body's import.
    ModelBuilder calls_only = model_with_newer_function_opset();
    calls_only.proto().clear_opset_import();
    calls_only.opset_import("custom", 1);
    OnnxModel inlined = calls_only.build();
    inline_local_functions(*inlined);
    EXPECT_EQ(get_onnx_opset(*inlined, ""), 13);
}

TEST(LocalFunctions, InliningAddsTheImportsOfTheBodies) {
    ModelBuilder builder = add_relu_model();
    builder.proto().mutable_functions(0)->add_opset_import()->set_domain("com.microsoft");
    builder.proto().mutable_functions(0)->mutable_opset_import(1)->set_version(1);
    OnnxModel model = builder.build();
    inline_local_functions(*model);
    EXPECT_EQ(model->functions_size(), 0);
    EXPECT_EQ(model->graph().node_size(), 4);
    EXPECT_EQ(get_onnx_opset(*model, "com.microsoft"), 1);
}

TEST(LocalFunctions, AFunctionCallingItselfIsOneClearError) {
    ModelBuilder builder = add_relu_model();
    onnx::FunctionProto& ping = add_function(builder, "Ping", {"a"}, {"b"});
    add_body_node(ping, "Pong", {"a"}, {"b"}, "custom");
    onnx::FunctionProto& pong = add_function(builder, "Pong", {"a"}, {"b"});
    add_body_node(pong, "Ping", {"a"}, {"b"}, "custom");
    builder.node("Ping", {"x"}, {"z"}, "ping", "custom");
    const OnnxModel model = builder.build();
    const std::string expected =
        "Local function 'custom.Ping' calls itself (custom.Ping -> custom.Pong -> custom.Ping)";
    EXPECT_EQ(error_message<ModelError>([&] { expand_function_calls(*model, model->graph()); }), expected);
    EXPECT_THROW(run_ref(*model, add_relu_feed()), ModelError);
}

TEST(LocalFunctions, ANodeNamingAMissingFunctionIsOneClearError) {
    ModelBuilder builder = add_relu_model();
    builder.node("AddRelu6", {"x", "y"}, {"z"}, "missing", "custom");
    const OnnxModel model = builder.build();
    EXPECT_EQ(error_message<ModelError>([&] { run_ref(*model, add_relu_feed()); }),
              "Node 'missing' calls local function 'custom.AddRelu6', which the model does not define");
}

TEST(LocalFunctions, ConstantFoldingSeesThroughCalls) {
    ModelBuilder builder = add_relu_model();
    builder.initializer("c", Tensor::from_doubles(DataType::kFloat32, {4}, {1, -1, 2, -2}));
    builder.node("AddRelu", {"c", "c"}, {"folded"}, "constant_call", "custom");
    builder.node("Add", {"second", "folded"}, {"out"}, "add");
    builder.output("out", DataType::kFloat32, Shape{4});
    OnnxModel model = builder.build();
    fold_constants(*model, {});
    for (const auto& node : model->graph().node()) EXPECT_NE(node.name(), "constant_call/add");
    const TensorMap out = run_ref(*model, add_relu_feed());
    EXPECT_THAT(elements_of<float>(out.at("out")), ElementsAre(3, 0, 11, 0));
}

TEST(LocalFunctions, CapabilityCountsACallAsSupportedWhenItsBodyIs) {
    const OnnxModel model = add_relu_model().build();
    const CapabilityReport report = check_capability(*model, ref_node_checker(), "ref");
    EXPECT_TRUE(report.fully_supported());
    EXPECT_EQ(report.nodes.size(), 2u);
}

TEST(LocalFunctions, LintsTestInferenceRunsThem) {
    const OnnxModel model = add_relu_model().build();
    LintOptions options;
    bool fed = false;
    options.make_feed = [&fed](const TensorMetadata&) {
        fed = true;
        return add_relu_feed();
    };
    const LintReport report = lint_onnx(*model, options);
    EXPECT_TRUE(fed);
    EXPECT_TRUE(report.valid());
    for (const auto& entry : report.entries()) EXPECT_EQ(entry.level, LintLevel::kInfo) << entry.message;
}

// ---- the tools ------------------------------------------------------------------------------------

TEST(LocalFunctionsCli, MarkAllComparesTheTensorsInsideFunctionsOnBothRuntimes) {
    testing::TempDir dir;
    add_relu_model().save(dir.file("model.onnx"));
    const auto result =
        testing::run_polygraphy({"run", dir.file("model.onnx"), "--ref", "--onnxrt", "--onnx-outputs", "mark", "all"});
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("call0/sum"));
    EXPECT_THAT(result.output, HasSubstr("AddRelu_1/sum"));
    EXPECT_THAT(result.output, HasSubstr("PASSED | All outputs matched"));
}

TEST(LocalFunctionsCli, InspectCapabilityAndDebugReduceSeeThroughCalls) {
    testing::TempDir dir;
    add_relu_model().save(dir.file("model.onnx"));
    const auto capability = testing::run_polygraphy({"inspect", "capability", dir.file("model.onnx")});
    EXPECT_EQ(capability.exit_code, 0) << capability.output;
    EXPECT_THAT(capability.output, HasSubstr("Graph is fully supported"));

    // The check fails while the second call's Add is in the candidate: reduce ends with that node.
    const std::string artifact = dir.file("polygraphy_debug.onnx");
    const auto reduce = testing::run_polygraphy({"debug", "reduce", dir.file("model.onnx"), "-o",
                                                 dir.file("reduced.onnx"), "--iter-artifact", artifact, "--check", "sh",
                                                 "-c", "! grep -q -a AddRelu_1/add " + artifact});
    ASSERT_EQ(reduce.exit_code, 0) << reduce.output;
    const auto run = testing::run_polygraphy({"run", dir.file("reduced.onnx"), "--ref"});
    EXPECT_EQ(run.exit_code, 0) << run.output;
}

TEST(LocalFunctionsCli, BadFunctionsAreOneLineErrors) {
    testing::TempDir dir;
    ModelBuilder missing = add_relu_model();
    missing.node("AddRelu6", {"x", "y"}, {"z"}, "missing", "custom");
    missing.save(dir.file("missing.onnx"));
    ModelBuilder recursive = add_relu_model();
    add_body_node(add_function(recursive, "Loop", {"a"}, {"b"}), "Loop", {"a"}, {"b"}, "custom");
    recursive.node("Loop", {"x"}, {"z"}, "loop", "custom");
    recursive.save(dir.file("recursive.onnx"));
    const struct {
        std::string model;
        std::string message;
    } cases[] = {
        {"missing.onnx", "[!] Node 'missing' calls local function 'custom.AddRelu6', which the model does not define"},
        {"recursive.onnx", "[!] Local function 'custom.Loop' calls itself (custom.Loop -> custom.Loop)"},
    };
    for (const auto& c : cases) {
        for (const auto& extra : std::vector<std::vector<std::string>>{{}, {"--onnx-outputs", "mark", "all"}}) {
            std::vector<std::string> args = {"run", dir.file(c.model), "--ref"};
            args.insert(args.end(), extra.begin(), extra.end());
            const auto result = testing::run_polygraphy(args);
            EXPECT_EQ(result.exit_code, 1) << result.output;
            EXPECT_THAT(result.output, HasSubstr(c.message));
            EXPECT_EQ(testing::count_occurrences(result.output, "[!]"), 1u) << result.output;
        }
    }
}

}  // namespace
}  // namespace polygraphy
