// `polygraphy surgeon` and its subtools extract, sanitize and insert.
#include "tools/surgeon/surgeon.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/comparator/data_loader.h"
#include "tools/args/model.h"
#include "tools/args/util.h"
#include "tools/surgeon/model_io.h"

namespace polygraphy::tools {
namespace {

// `auto` or a dtype name.
std::optional<DataType> parse_dtype(const std::string& flag, const std::string& arg, const std::string& text) {
    if (text == "auto") return std::nullopt;
    if (auto dtype = dtype_from_name(text)) return dtype;
    throw UsageError(
        fmt::format("Invalid value in {}: '{}'. '{}' is not a data type (use a name like float32, "
                    "int64, or auto)",
                    flag, arg, text));
}

// Polygraphy's parse_meta: `name:shape:dtype` (inputs) or `name:dtype` (outputs), split from the right.
std::vector<SubgraphTensor> parse_meta(const std::string& flag, const std::vector<std::string>& args,
                                       bool includes_shape) {
    std::vector<SubgraphTensor> tensors;
    for (const auto& arg : args) {
        SubgraphTensor tensor;
        std::string rest = arg;
        auto split_last = [&](const char* what) {
            const auto colon = rest.rfind(':');
            if (colon == std::string::npos)
                throw UsageError(fmt::format("Invalid value in {}: '{}'. Expected {} (missing {})", flag, arg,
                                             includes_shape ? "<name>:<shape>:<dtype>" : "<name>:<dtype>", what));
            std::string tail = rest.substr(colon + 1);
            rest.resize(colon);
            return tail;
        };
        const std::string dtype = split_last("the data type");
        tensor.dtype = parse_dtype(flag, arg, dtype);
        if (includes_shape) {
            // The shape may itself hold ':'-free text only, so the last ':' before the dtype separates it.
            const std::string shape = split_last("the shape");
            if (shape != "auto") tensor.shape = args_util::parse_shape(flag, shape);
        }
        if (rest.empty())
            throw UsageError(fmt::format("Invalid value in {}: '{}'. The tensor name is missing", flag, arg));
        tensor.name = rest;
        tensors.push_back(std::move(tensor));
    }
    return tensors;
}

}  // namespace

// ---- surgeon ------------------------------------------------------------------------------------

std::unique_ptr<Tool> make_surgeon_tool() {
    return std::make_unique<DispatchingTool>(
        "surgeon", "Modify ONNX models.\n", "Surgical Instruments",
        std::vector<DispatchingTool::SubtoolFactory>{
            make_subtool<SurgeonExtractTool>, make_subtool<SurgeonSanitizeTool>, make_subtool<SurgeonInsertTool>,
            make_subtool<SurgeonPruneTool>, make_subtool<SurgeonWeightStripTool>,
            make_subtool<SurgeonWeightReconstructTool>});
}

// ---- extract ------------------------------------------------------------------------------------

std::string SurgeonExtractTool::description() const {
    return "Extract a subgraph from an ONNX model based on the specified inputs and outputs.\n";
}

std::vector<std::unique_ptr<ArgGroup>> SurgeonExtractTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, "model-inputs"}));
    groups.push_back(std::make_unique<DataLoaderArgs>());
    groups.push_back(std::make_unique<OnnxInferShapesArgs>(OnnxInferShapesArgs::Config{false, true}));
    groups.push_back(std::make_unique<OnnxLoadArgs>(OnnxLoadArgs::Config{std::nullopt, false}));
    groups.push_back(std::make_unique<OnnxSaveArgs>(OnnxSaveArgs::Config{"output", "-o", true}));
    return groups;
}

std::vector<OptionSpec> SurgeonExtractTool::tool_options() const {
    return {
        Option({"--inputs"})
            .dest("input_meta")
            .kind(OptionKind::kValues)
            .help("Input metadata for subgraph (names, shapes, and data types). Use 'auto' to make `extract` "
                  "determine these automatically. Format: --inputs <name>:<shape>:<dtype>. For example: --inputs "
                  "input0:[1,3,224,224]:float32 input1:auto:auto. If omitted, uses the current model inputs."),
        Option({"--outputs"})
            .dest("output_meta")
            .kind(OptionKind::kValues)
            .help("Output metadata for subgraph (names and data types). Use 'auto' to make `extract` determine these "
                  "automatically. Format: --outputs <name>:<dtype>. For example: --outputs output0:float32 "
                  "output1:auto. If omitted, uses the current model outputs."),
    };
}

int SurgeonExtractTool::run_impl(const ParsedArgs& args) {
    std::vector<SubgraphTensor> inputs = parse_meta("--inputs", args.values("input_meta"), true);
    std::vector<SubgraphTensor> outputs = parse_meta("--outputs", args.values("output_meta"), false);
    if (!arg_group<ModelArgs>().input_shapes().empty())
        logger().warning(
            "--model-input-shapes has no effect in this build: fallback shape inference uses the model's static "
            "input shapes");
    OnnxModel model = load_and_log(arg_group<OnnxLoadArgs>());
    if (inputs.empty()) {
        for (const auto& [name, meta] : get_onnx_input_metadata(model->graph())) inputs.push_back({name, {}, {}});
    }
    if (outputs.empty()) {
        for (const auto& output : model->graph().output()) outputs.push_back({output.name(), {}, {}});
    }
    OnnxModel subgraph = extract_subgraph(*model, inputs, outputs);
    save_and_log(arg_group<OnnxSaveArgs>(), *subgraph);
    return 0;
}

// ---- sanitize -----------------------------------------------------------------------------------

std::string SurgeonSanitizeTool::description() const {
    return "Clean up, optimize, and/or change input shapes in an ONNX model.\n";
}

std::vector<std::unique_ptr<ArgGroup>> SurgeonSanitizeTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, "override-inputs"}));
    groups.push_back(std::make_unique<DataLoaderArgs>());
    groups.push_back(std::make_unique<OnnxInferShapesArgs>(OnnxInferShapesArgs::Config{true, true}));
    groups.push_back(std::make_unique<OnnxLoadArgs>(OnnxLoadArgs::Config{"", false}));
    groups.push_back(std::make_unique<OnnxSaveArgs>(OnnxSaveArgs::Config{"output", "-o", true}));
    return groups;
}

std::vector<OptionSpec> SurgeonSanitizeTool::tool_options() const {
    return {
        Option({"--cleanup"})
            .kind(OptionKind::kFlag)
            .help("Run dead layer removal on the graph. This is generally not required if other options are set."),
        Option({"--toposort"}).kind(OptionKind::kFlag).help("Topologically sort nodes in the graph."),
        Option({"--set-unbounded-dds-upper-bound"})
            .dest("upper_bounds")
            .kind(OptionKind::kValues)
            .help("Set upper bounds for tensors with unbounded DDS(data-dependent shape), by inserting the ONNX Min "
                  "operator. To specify per-tensor upper bounds, use the format: --set-unbounded-dds-upper-bound "
                  "[<tensor_name>:]<upper_bound>. If no tensor name is provided, the upper bound is used for any "
                  "tensors with unbounded DDS that are not explicitly specified. For example: "
                  "--set-unbounded-dds-upper-bound 10000 tensor_a:5000 tensor_b:4000. Note that setting upper bounds "
                  "only works for models that have been constant folded and have shapes inferred."),
        Option({"--fold-constants"})
            .kind(OptionKind::kFlag)
            .help("Fold constants in the graph by computing subgraphs whose values are not dependent on runtime "
                  "inputs."),
        Option({"--num-passes", "--num-const-fold-passes"})
            .dest("num_const_fold_passes")
            .type(ValueType::kInt)
            .help("The number of constant folding passes to run. Sometimes, subgraphs that compute tensor shapes may "
                  "not be foldable in a single pass. If not specified, Polygraphy will automatically determine the "
                  "number of passes required."),
        Option({"--partitioning"})
            .choices({"basic", "recursive"})
            .help("Controls how to partition the graph during constant folding. Accepted for compatibility: nodes are "
                  "folded one at a time, so a failure never affects other parts of the graph."),
        Option({"--no-fold-shapes"})
            .dest("no_fold_shapes")
            .kind(OptionKind::kFlag)
            .help("Disable folding Shape nodes and subgraphs that operate on shapes"),
        Option({"--no-per-pass-shape-inference"})
            .dest("no_per_pass_shape_inference")
            .kind(OptionKind::kFlag)
            .help("Disable shape inference between passes of constant folding"),
        Option({"--fold-size-threshold"})
            .help("The maximum per-tensor size threshold, in bytes, for which to apply constant folding. Any nodes "
                  "generating tensors larger than this size will not be folded away. Optionally, use a `K`, `M`, or "
                  "`G` suffix to indicate KiB, MiB, or GiB respectively."),
    };
}

int SurgeonSanitizeTool::run_impl(const ParsedArgs& args) {
    const auto upper_bounds =
        args.has("upper_bounds")
            ? std::optional(args_util::parse_per_key_ints(
                  "--set-unbounded-dds-upper-bound", args.values("upper_bounds"), std::numeric_limits<int64_t>::min()))
            : std::nullopt;
    const bool fold = args.flag("fold_constants");
    FoldConstantsOptions fold_options;
    for (const auto& [dest, flag] : std::vector<std::pair<std::string, std::string>>{
             {"num_const_fold_passes", "num-passes"},
             {"partitioning", "partitioning"},
             {"no_fold_shapes", "no-fold-shapes"},
             {"no_per_pass_shape_inference", "no-per-pass-shape-inference"},
             {"fold_size_threshold", "fold-size-threshold"}}) {
        if (!fold && args.has(dest))
            logger().warning(fmt::format(
                "Argument: '--{}' will be ignored since constant folding is not enabled.\nThis argument is only valid "
                "when the `--fold-constants` option is provided.",
                flag));
    }
    if (auto passes = args.value("num_const_fold_passes")) {
        const auto value = args_util::parse_int(*passes);
        if (!value || *value < 1 || *value > 1000000)
            throw UsageError(
                fmt::format("Invalid value for --num-passes: '{}'. Expected a number of passes of 1 or more", *passes));
        fold_options.num_passes = static_cast<int>(*value);
    }
    if (auto threshold = args.value("fold_size_threshold"))
        fold_options.size_threshold =
            static_cast<std::size_t>(args_util::parse_num_bytes("--fold-size-threshold", *threshold));
    fold_options.fold_shapes = !args.flag("no_fold_shapes");
    const auto& infer = arg_group<OnnxInferShapesArgs>();
    fold_options.infer_shapes = infer.do_shape_inference() && !args.flag("no_per_pass_shape_inference");
    // The loader (and override_input_shapes) have just inferred shapes.
    fold_options.infer_shapes_before_first_pass = !infer.do_shape_inference();

    OnnxModel model = load_and_log(arg_group<OnnxLoadArgs>(), upper_bounds);
    const TensorMetadata& shapes = arg_group<ModelArgs>().input_shapes();
    if (!shapes.empty()) {
        OrderedMap<DynShape> overrides;
        for (const auto& [name, meta] : shapes) {
            if (!meta.shape) throw UsageError(fmt::format("--override-input-shapes needs a shape for '{}'", name));
            overrides.set(name, *meta.shape);
        }
        override_input_shapes(*model, overrides);
        logger().info("Overriding input shapes to:\n" + get_onnx_input_metadata(model->graph()).to_string());
    }
    // As Polygraphy's (ONNX-GraphSurgeon's) cleanup: graph inputs stay even when unused.
    if (args.flag("cleanup")) cleanup(*model);
    if (args.flag("toposort")) toposort(*model);
    if (fold) fold_constants(*model, fold_options);
    save_and_log(arg_group<OnnxSaveArgs>(), *model);
    return 0;
}

// ---- insert -------------------------------------------------------------------------------------

namespace {

onnx::AttributeProto make_attribute(const std::string& arg) {
    const auto equals = arg.find('=');
    if (equals == std::string::npos || equals == 0)
        throw UsageError(fmt::format("Invalid value in --attrs: '{}'. Expected <name>=<value>", arg));
    onnx::AttributeProto attribute;
    attribute.set_name(arg.substr(0, equals));
    const args_util::Literal value = args_util::parse_literal("--attrs", arg.substr(equals + 1));
    using Kind = args_util::Literal::Kind;
    switch (value.kind) {
        case Kind::kInt:
            attribute.set_type(onnx::AttributeProto::INT);
            attribute.set_i(value.int_value);
            break;
        case Kind::kFloat:
            attribute.set_type(onnx::AttributeProto::FLOAT);
            attribute.set_f(static_cast<float>(value.float_value));
            break;
        case Kind::kString:
            attribute.set_type(onnx::AttributeProto::STRING);
            attribute.set_s(value.text);
            break;
        case Kind::kList: {
            const bool all_ints = std::all_of(value.items.begin(), value.items.end(),
                                              [](const auto& item) { return item.kind == Kind::kInt; });
            const bool all_numbers =
                std::all_of(value.items.begin(), value.items.end(), [](const auto& item) { return item.is_number(); });
            if (all_ints) {
                attribute.set_type(onnx::AttributeProto::INTS);
                for (const auto& item : value.items) attribute.add_ints(item.int_value);
            } else if (all_numbers) {
                attribute.set_type(onnx::AttributeProto::FLOATS);
                for (const auto& item : value.items) attribute.add_floats(static_cast<float>(item.as_double()));
            } else {
                attribute.set_type(onnx::AttributeProto::STRINGS);
                for (const auto& item : value.items) attribute.add_strings(item.text);
            }
            break;
        }
    }
    return attribute;
}

}  // namespace

std::string SurgeonInsertTool::description() const {
    return "[EXPERIMENTAL] Insert a single node into an ONNX model with the specified inputs and outputs.\n"
           "Any existing subgraph between the inputs and outputs is replaced.\n";
}

std::vector<std::unique_ptr<ArgGroup>> SurgeonInsertTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, ""}));
    groups.push_back(std::make_unique<OnnxInferShapesArgs>());
    groups.push_back(std::make_unique<OnnxLoadArgs>(OnnxLoadArgs::Config{std::nullopt, false}));
    groups.push_back(std::make_unique<OnnxSaveArgs>(OnnxSaveArgs::Config{"output", "-o", true}));
    return groups;
}

std::vector<OptionSpec> SurgeonInsertTool::tool_options() const {
    return {
        Option({"--inputs"})
            .kind(OptionKind::kValues)
            .required(true)
            .help("The names of input tensors for the new node. Order will be preserved. Format: --inputs <name>. "
                  "For example: --inputs name0 name1"),
        Option({"--outputs"})
            .kind(OptionKind::kValues)
            .required(true)
            .help("The names of output tensors for the new node. Order will be preserved. If an output tensor is "
                  "also specified as an input, a new tensor will be generated for the output. Format: --outputs "
                  "<name>. For example: --outputs name0 name1"),
        Option({"--op"}).required(true).help("The ONNX op to use for the new node"),
        Option({"--name"}).help("The name to use for the new node"),
        Option({"--attrs"})
            .kind(OptionKind::kValues)
            .help("Attributes to set in the new node. Format: --attrs <name>=value. For example: --attrs axis=1 "
                  "keepdims=1. Attributes of type: float, int, str, and lists of these types are supported. Numbers "
                  "including a decimal point will always be parsed as floats, and quoted values (e.g. --attrs "
                  "name='53') will always be parsed as strings. Values enclosed in brackets (e.g. --attrs axes=[0,1]) "
                  "will be parsed as lists."),
    };
}

int SurgeonInsertTool::run_impl(const ParsedArgs& args) {
    onnx::NodeProto node;
    node.set_op_type(*args.value("op"));
    if (auto name = args.value("name")) node.set_name(*name);
    for (const auto& input : args.values("inputs")) node.add_input(input);
    for (const auto& output : args.values("outputs")) node.add_output(output);
    for (const auto& arg : args.values("attrs")) *node.add_attribute() = make_attribute(arg);

    OnnxModel model = load_and_log(arg_group<OnnxLoadArgs>());
    insert_node(*model, std::move(node));
    save_and_log(arg_group<OnnxSaveArgs>(), *model);
    return 0;
}

}  // namespace polygraphy::tools
