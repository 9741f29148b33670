// Models whose nodes miss inputs, outputs or attributes (issue 33): for every operator of the
// built-in runtime's registry, a node with no inputs, with no outputs, with an empty required input
// name, with one output too many and without a required attribute, beside a valid path. Every tool
// refuses each with one line naming the node and exit status 1, in process and as the CLI; none
// crashes (libonnx's shape inference and the runtime's passes read nodes by position), and nothing
// is written. Without the node check (src/backend/onnx/node_check.cpp) these crash or fail.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <onnx/defs/schema.h>

#include "model_builder.h"
#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/lint.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnx/shard.h"
#include "polygraphy/backend/ref/kernel.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/tools/cli.h"

namespace polygraphy {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;
using ::testing::Not;
using testing::TempDir;

enum class Mutation { kNoInputs, kNoOutputs, kEmptyInputName, kExtraOutput, kMissingAttribute };

const char* mutation_name(Mutation mutation) {
    switch (mutation) {
        case Mutation::kNoInputs:
            return "no_inputs";
        case Mutation::kNoOutputs:
            return "no_outputs";
        case Mutation::kEmptyInputName:
            return "empty_input_name";
        case Mutation::kExtraOutput:
            return "extra_output";
        case Mutation::kMissingAttribute:
            return "missing_attribute";
    }
    return "?";
}

struct AritySample {
    std::string op_type;
    int opset = 17;
    Mutation mutation = Mutation::kNoInputs;
    ModelBuilder builder;
    std::string label() const { return op_type + "/" + mutation_name(mutation); }
};

// A value of the attribute's type; what it holds does not matter, the check comes first.
void add_dummy_attribute(onnx::NodeProto& node, const std::string& name, onnx::AttributeProto::AttributeType type) {
    onnx::AttributeProto& attribute = *node.add_attribute();
    attribute.set_name(name);
    attribute.set_type(type);
    switch (type) {
        case onnx::AttributeProto::FLOAT:
            attribute.set_f(1.0f);
            break;
        case onnx::AttributeProto::INT:
            attribute.set_i(1);
            break;
        case onnx::AttributeProto::STRING:
            attribute.set_s("x");
            break;
        case onnx::AttributeProto::FLOATS:
            attribute.add_floats(1.0f);
            break;
        case onnx::AttributeProto::INTS:
            attribute.add_ints(1);
            break;
        case onnx::AttributeProto::STRINGS:
            attribute.add_strings("x");
            break;
        case onnx::AttributeProto::TENSOR: {
            onnx::TensorProto& tensor = *attribute.mutable_t();
            tensor.set_data_type(onnx::TensorProto::FLOAT);
            tensor.add_float_data(1.0f);
            break;
        }
        case onnx::AttributeProto::GRAPH: {
            onnx::GraphProto& body = *attribute.mutable_g();
            body.set_name(name);
            break;
        }
        default:
            break;
    }
}

// The operators of the registry with a libonnx schema, each at the newest opset <= 17 it covers.
std::map<std::string, int> registry_operators() {
    std::map<std::string, int> chosen;
    for (const ref::OpEntry& entry : ref::OpRegistry::builtin().entries()) {
        if (!entry.domain.empty() || entry.since_version > 17) continue;
        const int opset = std::min(entry.until_version, 17);
        if (!onnx::OpSchemaRegistry::Schema(entry.op_type, opset, "")) continue;
        int& best = chosen[entry.op_type];
        best = std::max(best, opset);
    }
    return chosen;
}

std::vector<AritySample> arity_samples(const std::set<std::string>& only = {}) {
    std::vector<AritySample> samples;
    for (const auto& [op_type, opset] : registry_operators()) {
        if (!only.empty() && !only.count(op_type)) continue;
        const onnx::OpSchema& schema = *onnx::OpSchemaRegistry::Schema(op_type, opset, "");
        const int min_inputs = schema.min_input(), min_outputs = std::max(1, schema.min_output());
        const bool bounded_outputs = schema.max_output() < 64;
        std::vector<std::string> required;
        for (const auto& [name, attribute] : schema.attributes())
            if (attribute.required) required.push_back(name);
        const bool first_input_required =
            min_inputs > 0 && !schema.inputs().empty() && schema.inputs()[0].GetOption() != onnx::OpSchema::Optional;

        std::vector<Mutation> mutations = {Mutation::kNoOutputs};
        if (min_inputs > 0) mutations.push_back(Mutation::kNoInputs);
        if (first_input_required) mutations.push_back(Mutation::kEmptyInputName);
        if (bounded_outputs) mutations.push_back(Mutation::kExtraOutput);
        if (!required.empty()) mutations.push_back(Mutation::kMissingAttribute);

        for (Mutation mutation : mutations) {
            AritySample sample{op_type, opset, mutation, ModelBuilder(opset)};
            ModelBuilder& builder = sample.builder;
            // The valid path beside the bad node.
            builder.input("ok_in", DataType::kFloat32, Shape{2, 2});
            builder.node("Identity", {"ok_in"}, {"ok"}, "ok_node");
            builder.output("ok", DataType::kFloat32, Shape{2, 2});

            std::vector<std::string> inputs, outputs;
            const int input_count = mutation == Mutation::kNoInputs ? 0 : std::max(1, min_inputs);
            for (int i = 0; i < std::min(input_count, schema.max_input()); ++i) {
                inputs.push_back("in" + std::to_string(i));
                builder.input(inputs.back(), DataType::kFloat32, Shape{2, 2});
            }
            if (mutation == Mutation::kEmptyInputName) inputs[0].clear();
            const int output_count = mutation == Mutation::kNoOutputs     ? 0
                                     : mutation == Mutation::kExtraOutput ? schema.max_output() + 1
                                                                          : min_outputs;
            for (int i = 0; i < output_count; ++i) outputs.push_back("out" + std::to_string(i));
            onnx::NodeProto& node = builder.node(op_type, inputs, outputs, "bad");
            for (std::size_t i = 0; i < required.size(); ++i) {
                if (mutation == Mutation::kMissingAttribute && i == 0) continue;
                add_dummy_attribute(node, required[i], schema.attributes().at(required[i]).type);
            }
            samples.push_back(std::move(sample));
        }
    }
    return samples;
}

// The operators named in the issue and a few of each family, for the runs as separate processes.
const std::set<std::string> kCliOperators = {
    "GlobalAveragePool",  "Scan",    "Shape", "Split",  "Conv",   "MatMul", "If", "Loop", "Concat", "Reshape", "Resize",
    "LayerNormalization", "MaxPool", "Gemm",  "Gather", "Softmax"};

struct ToolCommand {
    std::string name;
    // "M" is the model, "O" an output file, "D" its folder, "C" a plugin configuration there, "J" a
    // .json file there, "S" a sharding hints file there
    std::vector<std::string> args;
};

const std::vector<ToolCommand> kTools = {
    {"run --ref", {"run", "M", "--ref"}},
    {"run --ref mark all", {"run", "M", "--ref", "--onnx-outputs", "mark", "all"}},
    {"run --onnxrt", {"run", "M", "--onnxrt"}},
    {"check lint", {"check", "lint", "M", "-o", "O"}},
    {"inspect model", {"inspect", "model", "M"}},
    {"inspect capability", {"inspect", "capability", "M", "-o", "O"}},
    {"surgeon sanitize", {"surgeon", "sanitize", "M", "--fold-constants", "-o", "O"}},
    {"surgeon extract", {"surgeon", "extract", "M", "--outputs", "ok:auto", "-o", "O"}},
    {"convert fp16", {"convert", "M", "--fp-to-fp16", "-o", "O"}},
    {"debug diff", {"debug", "diff", "M", "M", "--report", "O"}},
    {"debug precision", {"debug", "precision", "M", "-o", "O"}},
    {"plugin match", {"plugin", "match", "M", "--plugin-dir", "D", "-o", "O"}},
    {"plugin replace", {"plugin", "replace", "M", "--config", "C", "-o", "O"}},
    {"template shard-hints", {"template", "shard-hints", "M", "-o", "J"}},
    {"multi-device shard", {"multi-device", "shard", "M", "-s", "S", "-o", "O"}},
};

std::vector<std::string> command_line(const ToolCommand& tool, const std::string& model, const std::string& output) {
    std::vector<std::string> args;
    const std::filesystem::path folder = std::filesystem::path(output).parent_path();
    for (const auto& arg : tool.args) {
        if (arg == "C") {
            // Replaces the model's first node, so that the tool gets as far as the model allows.
            const std::string config = (folder / "config.yaml").string();
            std::ofstream(config) << "name: p\ninstances:\n- inputs: []\n  outputs:\n  - ok\n";
            args.push_back(config);
        } else if (arg == "S") {
            // Valid hints that shard nothing: the model is what the tool must refuse.
            const std::string hints = (folder / "hints.json").string();
            std::ofstream(hints) << shard_hints_to_json(ShardHints{});
            args.push_back(hints);
        } else if (arg == "J") {
            args.push_back((folder / "suggested.json").string());
        } else {
            args.push_back(arg == "M" ? model : arg == "O" ? output : arg == "D" ? folder.string() : arg);
        }
    }
    return args;
}

std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++count;
    return count;
}

// One clean refusal naming the node, and nothing written, except `check lint`'s report, which holds
// the finding.
void expect_clean_refusal(const ToolCommand& tool, int exit_code, const std::string& output, const std::string& op,
                          const std::string& written, const std::string& label) {
    SCOPED_TRACE(tool.name + " on " + label);
    EXPECT_EQ(exit_code, 1) << output;
    const std::string named = "Malformed node 'bad' (" + op + ", ai.onnx opset";
    EXPECT_GE(count_of(output, named), 1u) << output;
    if (tool.name != "check lint") {
        EXPECT_EQ(count_of(output, named), 1u) << output;
    }
    EXPECT_THAT(output, Not(HasSubstr("Unexpected error")));
    EXPECT_THAT(output, Not(HasSubstr("CHECK failed")));
    EXPECT_THAT(output, Not(HasSubstr("internal error")));
    if (tool.name == "check lint") {
        ASSERT_TRUE(std::filesystem::exists(written)) << output;
        std::ifstream report(written);
        const std::string text((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
        EXPECT_THAT(text, HasSubstr(named));
        EXPECT_THAT(text, ::testing::ContainsRegex("\"failing\": \\[[[:space:]]*\"bad\""));
    } else {
        EXPECT_FALSE(std::filesystem::exists(written)) << output;
        EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(written).parent_path() / "suggested.json"))
            << output;
    }
    std::filesystem::remove(written);
}

TEST(NodeArity, RegistryYieldsSamplesOfEveryMutation) {
    const std::vector<AritySample> samples = arity_samples();
    std::map<Mutation, int> per_mutation;
    std::set<std::string> ops;
    for (const auto& sample : samples) {
        ++per_mutation[sample.mutation];
        ops.insert(sample.op_type);
    }
    EXPECT_GE(ops.size(), 150u);  // the registry's standard operators with a libonnx schema
    EXPECT_EQ(per_mutation[Mutation::kNoOutputs], static_cast<int>(ops.size()));
    EXPECT_GE(per_mutation[Mutation::kNoInputs], 140);
    EXPECT_GE(per_mutation[Mutation::kEmptyInputName], 140);
    EXPECT_GE(per_mutation[Mutation::kExtraOutput], 140);
    EXPECT_GE(per_mutation[Mutation::kMissingAttribute], 8);  // Scan, If, Loop, Cast, Constant...
    for (const std::string op : {"GlobalAveragePool", "Scan", "Shape", "Split"}) EXPECT_TRUE(ops.count(op)) << op;
}

// The library's entry points: the check itself, the loaders, and every pass that reads nodes.
TEST(NodeArity, LibraryEntryPointsRefuseEveryMalformedNode) {
    for (AritySample& sample : arity_samples()) {
        SCOPED_TRACE(sample.label());
        const onnx::ModelProto& model = sample.builder.proto();
        const std::vector<NodeProblem> problems = find_node_problems(model);
        ASSERT_FALSE(problems.empty());
        EXPECT_EQ(problems.front().node, "bad");
        EXPECT_EQ(problems.front().op_type, sample.op_type);
        EXPECT_EQ(problems.front().top_level_index, 1);

        EXPECT_THROW((void)onnx_from_bytes(model.SerializeAsString()), MalformedNodeError);
        onnx::ModelProto copy = model;
        EXPECT_THROW((void)infer_shapes(copy), MalformedNodeError);
        EXPECT_THROW(infer_value_info(copy), MalformedNodeError);
        EXPECT_THROW((void)convert_to_fp16(copy), MalformedNodeError);
        EXPECT_THROW((void)fold_constants(copy), MalformedNodeError);
        EXPECT_THROW((void)ref::Session(model), MalformedNodeError);
        EXPECT_NO_THROW((void)infer_output_metadata(model, {}));

        LintOptions lint_options;
        lint_options.make_feed = [](const TensorMetadata& metadata) {
            TensorMap feed;
            for (const auto& [name, entry] : metadata) feed.set(name, Tensor(DataType::kFloat32, Shape{2, 2}));
            return feed;
        };
        const LintReport report = lint_onnx(model, lint_options);
        EXPECT_FALSE(report.valid());
        EXPECT_THAT(report.failing(), ::testing::Contains("bad"));
        EXPECT_THAT(report.passing(), ::testing::Contains("ok_node"));  // the valid path still ran
    }
}

// Every tool, in process (cli_main, as `polygraphy` calls it), on every sample.
TEST(NodeArity, EveryToolInProcessRefusesEveryMalformedNodeWithOneLine) {
    TempDir dir;
    const std::string model_path = dir.file("model.onnx"), written = dir.file("written.onnx");
    for (const AritySample& sample : arity_samples()) {
        sample.builder.save(model_path);
        for (const ToolCommand& tool : kTools) {
            std::vector<std::string> argv = {"polygraphy"};
            for (auto& arg : command_line(tool, model_path, written)) argv.push_back(arg);
            std::ostringstream out, err;
            ::testing::internal::CaptureStdout();
            const int status = tools::cli_main(argv, out, err);
            const std::string output = ::testing::internal::GetCapturedStdout() + out.str() + err.str();
            expect_clean_refusal(tool, status, output, sample.op_type, written, sample.label());
            if (::testing::Test::HasFailure()) return;  // one broken sample is enough to read
        }
    }
}

// The same as separate processes (no crash, no signal), for the operators and a few more.
TEST(NodeArity, EveryToolAsTheCliRefusesMalformedNodesWithOneLine) {
    TempDir dir;
    const std::string model_path = dir.file("model.onnx"), written = dir.file("written.onnx");
    for (const AritySample& sample : arity_samples(kCliOperators)) {
        sample.builder.save(model_path);
        for (const ToolCommand& tool : kTools) {
            const testing::CommandResult result = testing::run_polygraphy(command_line(tool, model_path, written));
            EXPECT_LT(result.exit_code, 128) << "killed by a signal: " << tool.name << " on " << sample.label();
            expect_clean_refusal(tool, result.exit_code, result.output, sample.op_type, written, sample.label());
            if (::testing::Test::HasFailure()) return;
        }
    }
}

TEST(NodeArity, MessageNamesTheNodeTheOperatorAndWhatIsWrong) {
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 3, 4, 4});
    builder.node("GlobalAveragePool", {}, {"y"}, "pool");
    builder.output("y", DataType::kFloat32, Shape{1, 3, 1, 1});
    try {
        check_nodes(builder.proto());
        FAIL() << "not refused";
    } catch (const MalformedNodeError& error) {
        EXPECT_STREQ(error.what(),
                     "Malformed node 'pool' (GlobalAveragePool, ai.onnx opset 17): it has no inputs, but "
                     "GlobalAveragePool takes exactly 1");
        ASSERT_EQ(error.problems().size(), 1u);
    }
}

TEST(NodeArity, SubgraphsAndLocalFunctionsAreCheckedToo) {
    ModelBuilder builder(17);
    builder.input("c", DataType::kBool, Shape{});
    onnx::NodeProto& branch = builder.node("If", {"c"}, {"y"}, "/blocks.0/if");
    for (const char* name : {"then_branch", "else_branch"}) {
        onnx::AttributeProto& attribute = *branch.add_attribute();
        attribute.set_name(name);
        attribute.set_type(onnx::AttributeProto::GRAPH);
        onnx::NodeProto& inner = *attribute.mutable_g()->add_node();
        inner.set_op_type("Split");
        inner.set_name("split");
        inner.add_input("c");
    }
    builder.output("y", DataType::kFloat32, Shape{1});
    const std::vector<NodeProblem> problems = find_node_problems(builder.proto());
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_EQ(problems[0].graph, "/blocks.0/if/then_branch");
    EXPECT_EQ(problems[0].top_level_node, "/blocks.0/if");
    EXPECT_EQ(problems[1].graph, "/blocks.0/if/else_branch");
    EXPECT_EQ(problems[0].message(),
              "Malformed node 'split' (Split, ai.onnx opset 17) in the subgraph '/blocks.0/if/then_branch': it has no "
              "outputs, but Split gives at least 1");
    const LintReport report = lint_onnx(builder.proto());
    EXPECT_THAT(report.failing(), ::testing::ElementsAre("/blocks.0/if"));

    // A local function's body, and a call with more inputs than the function declares.
    ModelBuilder with_function(17);
    with_function.opset_import("local", 1);
    with_function.input("x", DataType::kFloat32, Shape{2});
    with_function.node("Twice", {"x", "x"}, {"y"}, "call", "local");
    with_function.output("y", DataType::kFloat32, Shape{2});
    onnx::FunctionProto& function = *with_function.proto().add_functions();
    function.set_name("Twice");
    function.set_domain("local");
    function.add_input("a");
    function.add_output("b");
    *function.add_opset_import() = with_function.proto().opset_import(0);
    onnx::NodeProto& body = *function.add_node();
    body.set_op_type("Relu");
    body.add_output("b");
    const std::vector<NodeProblem> function_problems = find_node_problems(with_function.proto());
    ASSERT_EQ(function_problems.size(), 2u);
    EXPECT_EQ(function_problems[0].node, "call");
    EXPECT_THAT(function_problems[0].what, HasSubstr("the local function Twice declares 1 input"));
    EXPECT_EQ(function_problems[1].graph, "function Twice");
    EXPECT_EQ(function_problems[1].node, "Relu_0");
    EXPECT_EQ(function_problems[1].top_level_index, -1);

    // A call that leaves out an input its function's body requires: malformed where it is called,
    // found at load rather than by the pass that inlines it.
    ModelBuilder omitting(17);
    omitting.opset_import("local", 1);
    omitting.input("x", DataType::kFloat32, Shape{2});
    omitting.node("Pass", {"x"}, {"y"}, "full_call", "local");
    omitting.node("Pass", {}, {"z"}, "empty_call", "local");
    omitting.output("y", DataType::kFloat32, Shape{2});
    omitting.output("z", DataType::kFloat32, Shape{2});
    onnx::FunctionProto& pass = *omitting.proto().add_functions();
    pass.set_name("Pass");
    pass.set_domain("local");
    pass.add_input("a");
    pass.add_output("b");
    *pass.add_opset_import() = omitting.proto().opset_import(0);
    onnx::NodeProto& relu = *pass.add_node();
    relu.set_op_type("Relu");
    relu.add_input("a");
    relu.add_output("b");
    const std::vector<NodeProblem> omitted = find_node_problems(omitting.proto());
    ASSERT_EQ(omitted.size(), 1u);
    EXPECT_EQ(omitted[0].node, "empty_call");
    EXPECT_EQ(omitted[0].what,
              "it leaves out inputs or attributes of the local function Pass, so its node 'Relu_0' is malformed: "
              "input 0 of Relu is required, but its name is empty");

    // A call that does not give an attribute the body refers to (onnx 1.12 functions have no
    // defaults): inlining drops it, and Concat requires its axis (fuzzing).
    ModelBuilder unbound(17);
    unbound.opset_import("local", 1);
    unbound.input("x", DataType::kFloat32, Shape{2});
    onnx::NodeProto& with_axis = unbound.node("Join", {"x"}, {"y"}, "call_with_axis", "local");
    testing::set_attr(with_axis, "ax", int64_t{0});
    unbound.node("Join", {"x"}, {"z"}, "call_without_axis", "local");
    unbound.output("y", DataType::kFloat32, Shape{4});
    unbound.output("z", DataType::kFloat32, Shape{4});
    onnx::FunctionProto& join = *unbound.proto().add_functions();
    join.set_name("Join");
    join.set_domain("local");
    join.add_input("a");
    join.add_output("b");
    join.add_attribute("ax");
    *join.add_opset_import() = unbound.proto().opset_import(0);
    onnx::NodeProto& concat = *join.add_node();
    concat.set_op_type("Concat");
    concat.add_input("a");
    concat.add_input("a");
    concat.add_output("b");
    onnx::AttributeProto& axis = *concat.add_attribute();
    axis.set_name("axis");
    axis.set_ref_attr_name("ax");
    axis.set_type(onnx::AttributeProto::INT);
    const std::vector<NodeProblem> unbound_problems = find_node_problems(unbound.proto());
    ASSERT_EQ(unbound_problems.size(), 1u);
    EXPECT_EQ(unbound_problems[0].node, "call_without_axis");
    EXPECT_THAT(unbound_problems[0].what, HasSubstr("it lacks the required attribute 'axis' of Concat"));
}

// Fuzzing found the check of left-out inputs following calls of calls once per path (a function
// calling itself, or each function calling the next twice, took hours). Each function and set of
// left-out inputs is now checked once.
TEST(NodeArity, CallsOfCallsThatLeaveOutInputsAreCheckedOnceEach) {
    ModelBuilder builder(17);
    builder.opset_import("local", 1);
    builder.node("F0", {}, {"y"}, "call", "local");
    builder.output("y", DataType::kFloat32, Shape{2});
    constexpr int kDepth = 40;
    // (Literals in this loop trip GCC 12's -Wstringop-overflow.)
    const std::string domain = "local", input = "a", output = "b", relu_type = "Relu", prefix = "F";
    const std::vector<std::string> call_outputs = {"c1", "c2"};
    for (int level = 0; level < kDepth; ++level) {
        onnx::FunctionProto& function = *builder.proto().add_functions();
        function.set_name(prefix + std::to_string(level));
        function.set_domain(domain);
        function.add_input(input);
        function.add_output(output);
        *function.add_opset_import() = builder.proto().opset_import(0);
        const std::string next = prefix + std::to_string((level + 1) % kDepth);  // the last calls the first
        for (const std::string& call_output : call_outputs) {
            onnx::NodeProto& call = *function.add_node();
            call.set_op_type(next);
            call.set_domain(domain);
            call.add_output(call_output);
        }
        onnx::NodeProto& relu = *function.add_node();
        relu.set_op_type(relu_type);
        relu.add_input(input);
        relu.add_output(output);
    }
    const std::vector<NodeProblem> problems = find_node_problems(builder.proto());
    ASSERT_FALSE(problems.empty());
    EXPECT_EQ(problems[0].node, "call");
    EXPECT_THAT(problems[0].what,
                HasSubstr("leaves out inputs or attributes of the local function F0, so its node 'Relu_2'"));
}

TEST(NodeArity, ValidNodesPassIncludingOptionalInputsAndNewerOpsets) {
    // Optional inputs left empty in the middle, optional outputs omitted.
    ModelBuilder builder(17);
    builder.input("x", DataType::kFloat32, Shape{1, 1, 4, 4});
    builder.input("sizes", DataType::kInt64, Shape{4});
    builder.node("Resize", {"x", "", "", "sizes"}, {"r"}, "resize");
    builder.node("Dropout", {"r"}, {"y", ""}, "dropout");
    builder.output("y", DataType::kFloat32, Shape{1, 1, 8, 8});
    EXPECT_TRUE(find_node_problems(builder.proto()).empty());

    // Opset 18 moved ReduceMean's axes into an input; libonnx 1.12 knows only its opset-13 schema.
    ModelBuilder reduce(18);
    reduce.input("x", DataType::kFloat32, Shape{2, 3});
    reduce.input("axes", DataType::kInt64, Shape{1});
    reduce.node("ReduceMean", {"x", "axes"}, {"y"}, "mean");
    reduce.output("y", DataType::kFloat32, Shape{2, 1});
    EXPECT_TRUE(find_node_problems(reduce.proto()).empty());
    reduce.proto().mutable_graph()->mutable_node(0)->add_input("extra");
    EXPECT_EQ(find_node_problems(reduce.proto()).size(), 1u);

    // Unknown domains without a declared signature are left to the runtime, declared ones are checked.
    ModelBuilder custom(17);
    custom.opset_import("test.node_check", 1);
    custom.input("x", DataType::kFloat32, Shape{2});
    custom.node("MyOp", {}, {"y"}, "mine", "test.node_check");
    custom.output("y", DataType::kFloat32, Shape{2});
    EXPECT_TRUE(find_node_problems(custom.proto()).empty());
    declare_operator_signature("test.node_check", "MyOp", 1, OperatorSignature{1, 2, 1, 1, {"alpha"}, {}});
    const std::vector<NodeProblem> declared = find_node_problems(custom.proto());
    ASSERT_EQ(declared.size(), 2u);
    EXPECT_EQ(declared[0].what, "it has no inputs, but MyOp takes 1 to 2");
    EXPECT_EQ(declared[1].what, "it lacks the required attribute 'alpha' of MyOp");
}

// Fuzzing finding F6 (RELIABILITY.md): nodes that fit their operators but read tensors nothing
// defined before them. libonnx 1.12's inference dereferenced the missing input type and crashed
// (SIGSEGV in ShapeInferenceImplBase::process); it is now never given such a graph.
TEST(NodeArity, InputsNotDefinedBeforeTheirNodeNeverReachLibonnx) {
    for (const bool out_of_order : {false, true}) {
        SCOPED_TRACE(out_of_order ? "out of order" : "dangling");
        ModelBuilder builder(17);
        if (out_of_order) {
            builder.input("x", DataType::kFloat32, Shape{1, 2, 3, 3});
            builder.node("Shape", {"pooled"}, {"s"}, "Shape_node");
            builder.node("GlobalAveragePool", {"x"}, {"pooled"}, "pool");
        } else {
            builder.node("Shape", {"r"}, {"s"}, "Shape_node");
            builder.node("GlobalAveragePool", {"x"}, {"pooled"}, "pool");
        }
        builder.output("s", DataType::kInt64, Shape{4});
        EXPECT_TRUE(find_node_problems(builder.proto()).empty());
        EXPECT_NO_THROW((void)infer_output_metadata(builder.proto(), {}));
        onnx::ModelProto copy = builder.proto();
        EXPECT_NO_THROW((void)infer_shapes(copy));
        onnx::ModelProto capability_copy = builder.proto();
        EXPECT_NO_THROW(infer_value_info(capability_copy));
        onnx::ModelProto fp16_copy = builder.proto();
        EXPECT_NO_THROW((void)convert_to_fp16(fp16_copy));
    }
}

TEST(NodeArity, DeepNestingIsReportedWithoutExhaustingTheStack) {
    ModelBuilder builder(17);
    builder.input("c", DataType::kBool, Shape{});
    onnx::NodeProto current;
    current.set_op_type("Identity");
    current.add_input("c");
    current.add_output("y");
    const std::string condition = "c", output = "y";  // (literals here trip GCC 12's -Wstringop-overflow)
    for (int depth = 0; depth < 5000; ++depth) {
        onnx::NodeProto parent;
        parent.set_op_type("If");
        parent.add_input(condition);
        parent.add_output(output);
        onnx::AttributeProto& branch = *parent.add_attribute();
        branch.set_name("then_branch");
        branch.set_type(onnx::AttributeProto::GRAPH);
        *branch.mutable_g()->add_node() = std::move(current);
        current = std::move(parent);
    }
    *builder.proto().mutable_graph()->add_node() = std::move(current);
    builder.output("y", DataType::kBool, Shape{});
    const std::vector<NodeProblem> problems = find_node_problems(builder.proto());
    EXPECT_THAT(problems.back().message(), HasSubstr("nested deeper than 64 levels"));
}

}  // namespace
}  // namespace polygraphy
