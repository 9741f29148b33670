#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/run_results.h"
#include "polygraphy/comparator/data_loader.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/comparator/data_loader.h"
#include "tools/args/debug/debug_args.h"
#include "tools/args/model.h"
#include "tools/debug/debug.h"
#include "tools/debug/reducer.h"

namespace fs = std::filesystem;

namespace polygraphy::tools {
namespace {

// Tensors a body graph reads from the enclosing scope (names it uses but does not define).
void collect_outer_scope_reads(const onnx::GraphProto& body, std::vector<std::string>& reads) {
    std::set<std::string> defined;
    for (const auto& input : body.input()) defined.insert(input.name());
    for (const auto& init : body.initializer()) defined.insert(init.name());
    for (const auto& node : body.node())
        for (const auto& output : node.output()) defined.insert(output);
    for (const auto& node : body.node()) {
        for (const auto& input : node.input())
            if (!input.empty() && !defined.count(input)) reads.push_back(input);
        for (const auto& attribute : node.attribute()) {
            std::vector<std::string> nested;
            if (attribute.has_g()) collect_outer_scope_reads(attribute.g(), nested);
            for (const auto& graph : attribute.graphs()) collect_outer_scope_reads(graph, nested);
            for (const auto& name : nested)
                if (!defined.count(name)) reads.push_back(name);
        }
    }
}

// Every tensor a node reads: its inputs, then what its subgraph bodies read from outside.
std::vector<std::string> node_reads(const onnx::NodeProto& node) {
    std::vector<std::string> reads;
    for (const auto& input : node.input())
        if (!input.empty()) reads.push_back(input);
    for (const auto& attribute : node.attribute()) {
        if (attribute.has_g()) collect_outer_scope_reads(attribute.g(), reads);
        for (const auto& graph : attribute.graphs()) collect_outer_scope_reads(graph, reads);
    }
    return reads;
}

std::string node_label(const onnx::NodeProto& node, std::size_t index) {
    return (node.name().empty() ? "<unnamed node " + std::to_string(index) + ">" : node.name()) +
           " [Op: " + node.op_type() + "]";
}

// Fails early, before any check runs, when a file cannot be created at `path`.
void ensure_writable(const std::string& path, const std::string& flag) {
    std::error_code error;
    if (fs::is_directory(path, error))
        throw PolygraphyException("Cannot write " + flag + " to " + path + ": it is a directory");
    fs::path folder = fs::path(path).parent_path();
    if (folder.empty()) folder = ".";
    fs::create_directories(folder, error);
    if (error)
        throw PolygraphyException("Cannot write " + flag + " to " + path + ": cannot create folder " + folder.string() +
                                  ": " + error.message());
    std::string probe = (folder / ".polygraphy_write_probe_XXXXXX").string();
    const int fd = ::mkstemp(probe.data());
    if (fd < 0) throw PolygraphyException("Cannot write " + flag + " to " + path + ": " + std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
}

// The model being reduced, with what is needed to cut candidate models out of it.
class CandidateFactory {
public:
    CandidateFactory(onnx::ModelProto model, TensorMap values, bool freeze_inputs)
        : model_(std::move(model)), values_(std::move(values)), freeze_inputs_(freeze_inputs) {
        const auto& graph = model_.graph();
        for (const auto& init : graph.initializer()) initializers_.insert(init.name());
        for (const auto& input : graph.input()) graph_inputs_.insert(input.name());
        for (const auto& output : graph.output()) graph_outputs_.insert(output.name());
        for (int n = 0; n < graph.node_size(); ++n) {
            reads_.push_back(node_reads(graph.node(n)));
            for (const auto& name : reads_.back()) consumers_[name].push_back(static_cast<std::size_t>(n));
            for (const auto& output : graph.node(n).output())
                if (!output.empty()) producer_[output] = static_cast<std::size_t>(n);
        }
    }

    std::size_t num_nodes() const { return static_cast<std::size_t>(model_.graph().node_size()); }
    const onnx::ModelProto& model() const { return model_; }

    /// The model made of exactly `nodes`: tensors they read but do not produce (other than
    /// initializers) are its inputs; tensors they produce that the model outputs or that other
    /// nodes read are its outputs.
    OnnxModel build(const NodeSet& nodes) const {
        std::vector<bool> member(num_nodes(), false);
        for (const auto n : nodes) member.at(n) = true;
        std::vector<SubgraphTensor> inputs;
        std::vector<SubgraphTensor> outputs;
        std::set<std::string> seen;
        for (const auto n : nodes) {
            for (const auto& name : reads_[n]) {
                if (initializers_.count(name) && !graph_inputs_.count(name)) continue;
                const auto producer = producer_.find(name);
                if (producer != producer_.end() && member[producer->second]) continue;
                if (seen.insert(name).second) inputs.push_back(describe(name));
            }
        }
        for (const auto n : nodes) {
            for (const auto& name : model_.graph().node(static_cast<int>(n)).output()) {
                if (name.empty() || !seen.insert(name).second) continue;
                bool needed = graph_outputs_.count(name) > 0;
                if (const auto found = consumers_.find(name); found != consumers_.end())
                    for (const auto consumer : found->second) needed = needed || !member[consumer];
                if (needed) outputs.push_back(describe(name));
            }
        }
        OnnxModel candidate = extract_subgraph(model_, inputs, outputs);
        if (freeze_inputs_) freeze(*candidate);
        return candidate;
    }

    /// Nodes of `nodes` as a short list for the log.
    std::string describe_nodes(const NodeSet& nodes) const {
        std::string text;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (i == 3 && nodes.size() > 6) {
                text += ", ... (" + std::to_string(nodes.size() - 5) + " more)";
                i = nodes.size() - 2;
                continue;
            }
            text += (i ? ", " : "") + node_label(model_.graph().node(static_cast<int>(nodes[i])), nodes[i]);
        }
        return text;
    }

private:
    // Boundary tensors of the original model keep their declarations; intermediate ones take the
    // dtype and shape of the reference run's value when there is one (else extraction infers them).
    SubgraphTensor describe(const std::string& name) const {
        SubgraphTensor tensor{name, std::nullopt, std::nullopt};
        if (graph_inputs_.count(name) || graph_outputs_.count(name)) return tensor;
        if (const Tensor* value = values_.find(name)) {
            tensor.dtype = value->dtype();
            tensor.shape = to_dyn_shape(value->shape());
        }
        return tensor;
    }

    // Intermediate tensors feeding the candidate become initializers holding their reference values.
    void freeze(onnx::ModelProto& candidate) const {
        auto* graph = candidate.mutable_graph();
        auto* inputs = graph->mutable_input();
        for (int i = inputs->size() - 1; i >= 0; --i) {
            const std::string name = inputs->Get(i).name();
            if (graph_inputs_.count(name)) continue;
            const Tensor* value = values_.find(name);
            if (!value) continue;
            *graph->add_initializer() = tensor_to_proto(*value, name);
            inputs->DeleteSubrange(i, 1);
        }
    }

    onnx::ModelProto model_;
    TensorMap values_;
    bool freeze_inputs_;
    std::set<std::string> initializers_;
    std::set<std::string> graph_inputs_;
    std::set<std::string> graph_outputs_;
    std::vector<std::vector<std::string>> reads_;
    std::map<std::string, std::vector<std::size_t>> consumers_;
    std::map<std::string, std::size_t> producer_;
};

// Values of every tensor for the data loader's first feed: the feed itself, every node output from
// the built-in runtime (`--onnx-outputs mark all`), and any other entry of the feed that names a
// tensor of the model (a layerwise inputs file), which wins so that candidates see the same values
// as a check that loads that file.
// Every tensor's value on each sample the data loader gives (Polygraphy's reduce reads the first only).
std::vector<TensorMap> reference_values(const onnx::ModelProto& model, const DataLoaderFn& loader) {
    auto marked = std::make_shared<onnx::ModelProto>(model);
    marked = modify_outputs(marked, kMarkAll);
    ref::Session session(*marked);
    const auto names = onnx_tensor_names(model.graph());
    const std::set<std::string> known(names.begin(), names.end());
    std::vector<TensorMap> samples;
    while (const auto feed = loader(samples.size(), session.input_metadata())) {
        const TensorMap inputs = coerce_feed(*feed, session.input_metadata());
        TensorMap values = inputs;
        for (const auto& [name, value] : session.run(inputs)) values.set(name, value);
        for (const auto& [name, value] : *feed)
            if (known.count(name) && !inputs.find(name)) values.set(name, value);
        samples.push_back(std::move(values));
    }
    if (samples.empty()) throw PolygraphyException("The data loader provided no inputs");
    return samples;
}

// Polygraphy's str_from_onnx summary, with the nodes listed (they are what the user is after).
std::string model_summary(const onnx::ModelProto& model) {
    OnnxSummaryOptions options;
    options.show_layers = true;
    return str_from_onnx(model, options);
}

}  // namespace

std::string ReduceTool::description() const {
    return "[EXPERIMENTAL] Reduce a failing ONNX model to the minimum set of nodes that cause the failure.\n"
           "\n"
           "`debug reduce` follows the same general process as other `debug` subtools.\n"
           "Specifically, it does the following during each iteration:\n"
           "\n"
           "1. Generates a successively smaller subgraph of a given ONNX model and saves it in the\n"
           "    current directory as `polygraphy_debug.onnx` by default.\n"
           "\n"
           "2. Evaluates it with the `--check` command (or by asking you when there is none).\n"
           "   If the iteration fails, it further reduces the model during the subsequent iteration.\n"
           "   Otherwise, it expands the model to include more nodes from the original.\n"
           "\n"
           "3. When the model cannot be reduced further, it saves it to the path specified by `--output`.\n"
           "\n"
           "Before reducing, constants are folded and the model is run once on the built-in runtime to\n"
           "find the values of every intermediate tensor (from the data loader's first feed; entries\n"
           "of a --load-inputs file that name intermediate tensors override them). Tensors that a\n"
           "subgraph reads but does not compute become its inputs: give the check command the same\n"
           "values with --load-inputs (see --save-layerwise-inputs), or use --freeze-inputs.\n"
           "\n"
           "The typical usage of `debug reduce` is:\n"
           "\n"
           "    polygraphy debug reduce <onnx_model> --output <reduced_model> \\\n"
           "        [--check <check_command>]\n"
           "\n"
           "`polygraphy run` is usually a good choice for the `--check` command.\n";
}

std::vector<std::unique_ptr<ArgGroup>> ReduceTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<CheckCmdArgs>());
    groups.push_back(std::make_unique<ArtifactSortArgs>(false));
    groups.push_back(
        std::make_unique<IterativeDebugArgs>(IterativeDebugArgs::Config{std::string("polygraphy_debug.onnx"), false}));
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, "model-inputs"}));
    groups.push_back(std::make_unique<OnnxSaveArgs>());
    groups.push_back(std::make_unique<OnnxInferShapesArgs>(OnnxInferShapesArgs::Config{true, true}));
    // `--outputs/--exclude-outputs` as in Polygraphy's reduce; -o is the reduced model, not the loaded one.
    groups.push_back(std::make_unique<OnnxLoadArgs>(OnnxLoadArgs::Config{std::string(), false}));
    groups.push_back(std::make_unique<DataLoaderArgs>());
    return groups;
}

std::vector<OptionSpec> ReduceTool::tool_options() const {
    return {
        Option({"--min-good", "--minimal-good"})
            .dest("min_good")
            .help("Path at which to save an ONNX model close in size to the reduced model that does not have the "
                  "failure. This is not guaranteed to be generated."),
        Option({"--no-reduce-inputs"})
            .kind(OptionKind::kFlag)
            .exclusive_group("disable_passes")
            .help("Do not attempt to change the graph inputs to reduce the model further. 'reduce' will then only "
                  "attempt to find the earliest failing outputs."),
        Option({"--no-reduce-outputs"})
            .kind(OptionKind::kFlag)
            .exclusive_group("disable_passes")
            .help("Do not attempt to change the graph outputs to reduce the model further. 'reduce' will then only "
                  "attempt to find the latest failing inputs."),
        Option({"--mode"})
            .choices({"bisect", "linear"})
            .help("Strategy to use to iteratively remove nodes from the model. 'bisect' will use binary search, and "
                  "'linear' will delete one node at a time. 'linear' mode may be significantly slower, but can offer "
                  "better results in models with branches. One strategy is to use 'bisect' first, and then further "
                  "reduce the result with 'linear'. Defaults to 'bisect'."),
        Option({"--freeze-inputs"})
            .kind(OptionKind::kFlag)
            .help("Store the values of intermediate tensors that a subgraph reads as initializers of the subgraph "
                  "instead of making them inputs, so the check command needs no input data for them."),
        Option({"--save-layerwise-inputs"})
            .dest("save_layerwise_inputs")
            .metavar("PATH")
            .help("Save the values of the model inputs and of every intermediate tensor (one feed, as "
                  "`--save-inputs` writes it) so the check command can give subgraphs the same values with "
                  "`--load-inputs PATH`."),
    };
}

int ReduceTool::run_impl(const ParsedArgs& args) {
    const auto& save_args = arg_group<OnnxSaveArgs>();
    const auto& load_args = arg_group<OnnxLoadArgs>();
    const auto& model_args = arg_group<ModelArgs>();
    auto& iterative = arg_group<IterativeDebugArgs>();
    const auto min_good_path = args.value("min_good");
    const auto layerwise_path = args.value("save_layerwise_inputs");
    if (!save_args.path() && !min_good_path)
        throw UsageError(
            "--output (where to write the reduced model) and/or --min-good (where to write a reduced "
            "model that passes) must be provided!");
    // Refuse unwritable destinations now rather than after every check has run.
    if (save_args.path()) ensure_writable(*save_args.path(), "the reduced model (--output)");
    if (min_good_path) ensure_writable(*min_good_path, "the minimal good model (--min-good)");
    if (layerwise_path) ensure_writable(*layerwise_path, "the layerwise inputs (--save-layerwise-inputs)");

    Reducer::Options options;
    options.mode = args.value("mode").value_or("bisect") == "linear" ? ReduceMode::kLinear : ReduceMode::kBisect;
    options.reduce_inputs = !args.flag("no_reduce_inputs");
    options.reduce_outputs = !args.flag("no_reduce_outputs");
    const bool freeze_inputs = args.flag("freeze_inputs");

    const auto& infer_args = arg_group<OnnxInferShapesArgs>();
    OnnxModel model = load_args.onnx_loader()();
    const int num_orig_nodes = model->graph().node_size();

    if (!model_args.input_shapes().empty()) {
        OrderedMap<DynShape> shapes;
        for (const auto& [name, entry] : model_args.input_shapes())
            if (entry.shape) shapes.set(name, *entry.shape);
        override_input_shapes(*model, shapes);
    }

    logger().info("Folding constants in the model before reducing it");
    FoldConstantsOptions fold_options;
    fold_options.infer_shapes = infer_args.do_shape_inference();
    fold_constants(*model, fold_options);
    cleanup(*model);
    toposort(*model);
    infer_args.infer_shapes(*model);

    const TensorMetadata input_metadata = get_onnx_input_metadata(model->graph());
    bool dynamic = false;
    for (const auto& [name, entry] : input_metadata)
        dynamic = dynamic || !entry.shape || is_shape_dynamic(*entry.shape);
    if (dynamic)
        logger().warning(
            "This model uses dynamic input shapes.\nYou may want to provide input shapes to `debug reduce` "
            "using the `--model-input-shapes` option to prevent unexpected behavior.\n");

    for (const auto& node : model->graph().node()) {
        if (node.op_type() != "Shape") continue;
        logger().warning(
            "This model includes shape operations, which may cause issues while reducing.\n"
            "You may want to freeze the input shapes (--model-input-shapes) so that constant folding "
            "removes them, or fold them with:\n"
            "\t`polygraphy surgeon sanitize --override-input-shapes <shapes> --fold-constants`");
        break;
    }

    std::vector<TensorMap> samples;
    {
        logger().info(
            "Running the model on the built-in runtime to find the values of intermediate tensors.\n"
            "This will cause intermediate models to have static shapes.");
        const auto indent = logger().indent();
        try {
            samples = reference_values(*model, arg_group<DataLoaderArgs>().get_data_loader());
        } catch (const PolygraphyException& error) {
            if (freeze_inputs || layerwise_path)
                throw PolygraphyException(std::string("Could not run the model to find the values of intermediate "
                                                      "tensors, which --freeze-inputs/--save-layerwise-inputs need: ") +
                                          error.what());
            logger().warning(std::string("Could not run the model on the built-in runtime, so subgraph inputs will "
                                         "have the dtypes and shapes shape inference finds: ") +
                             error.what());
        }
    }
    if (freeze_inputs && samples.size() > 1)
        throw UsageError(fmt::format(
            "--freeze-inputs stores one sample's intermediate values in the subgraphs, but the data loader gives {}: "
            "check every sample with --save-layerwise-inputs instead, or give one sample",
            samples.size()));
    if (layerwise_path) {
        // Every sample: a check that loads them (`run --load-inputs`) checks each candidate on all of them.
        save_inputs(samples, *layerwise_path);
        logger().info(
            fmt::format("Saving layerwise input data of {} sample(s) to {}", samples.size(), *layerwise_path));
    }

    TensorMap values = samples.empty() ? TensorMap{} : std::move(samples.front());
    const CandidateFactory factory(*model, std::move(values), freeze_inputs);
    Reducer reducer(factory.num_nodes(), options);
    const std::size_t total = factory.num_nodes();
    while (!reducer.done()) {
        const std::string phase = reducer.phase();
        const bool original = phase == "original";
        if (original)
            logger().start("Checking that the original model (after constant folding) fails");
        else
            logger().start("Reducing model " + phase);
        IterativeDebugArgs::Callbacks callbacks;
        callbacks.suffix = "_" + phase;
        callbacks.remaining = [&]() -> std::optional<std::size_t> { return reducer.remaining(); };
        callbacks.make_artifact = [&](std::size_t) {
            const auto candidate = reducer.candidate();
            if (!candidate || reducer.phase() != phase) return IterativeDebugArgs::Step::kStop;
            logger().info("Phase: " + phase + " | Nodes: " + std::to_string(candidate->size()) + " of " +
                          std::to_string(total) + " | " + factory.describe_nodes(*candidate));
            save_onnx(*factory.build(*candidate), *iterative.iter_artifact_path());
            return IterativeDebugArgs::Step::kCheck;
        };
        callbacks.advance = [&](std::size_t, bool success) {
            reducer.report(success);
            logger().info("Verdict: " + std::string(success ? "pass" : "fail") + " | Smallest failing model so far: " +
                          std::to_string(reducer.best_bad().size()) + " node(s)");
            return !reducer.done() && reducer.phase() == phase;
        };
        iterative.iterate(callbacks);
        if (!original) logger().finish("Finished reducing model " + phase);
    }
    logger().info("Checks run: " + std::to_string(reducer.checks()));

    if (reducer.no_failure())
        throw PolygraphyException(
            "The original model did not fail the check, so there is nothing to reduce.\n"
            "Note: Make sure the --check command fails on the model (see --fail-regex, "
            "--fail-code and --ignore-fail-code for what counts as a failure)");

    const OnnxModel reduced = factory.build(reducer.best_bad());
    if (save_args.path()) {
        const auto num_reduced = reduced->graph().node_size();
        if (options.mode == ReduceMode::kBisect && num_reduced > 1 && num_orig_nodes > 0 &&
            static_cast<double>(num_reduced) / num_orig_nodes >= 0.25)
            logger().warning("It looks like this model could potentially be reduced further.\nYou may want to reduce " +
                             *save_args.path() + " again using --mode=linear. ");
        logger().info("Minimum Bad Model:\n" + model_summary(*reduced) + "\n\n");
        save_args.save(*reduced);
    }
    if (min_good_path) {
        const auto good = reducer.best_good();
        if (!good) {
            logger().warning(
                "Could not find a minimal model close in size to the reduced model that does not cause a "
                "failure.");
        } else {
            const OnnxModel min_good = factory.build(*good);
            logger().info("Minimum Good Model:\n" + model_summary(*min_good) + "\n\n");
            save_onnx(*min_good, *min_good_path);
        }
    }
    return 0;
}

}  // namespace polygraphy::tools
