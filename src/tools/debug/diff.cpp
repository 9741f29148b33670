#include <filesystem>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/job/diff_job.h"
#include "tools/args/comparator/data_loader.h"
#include "tools/args/util.h"
#include "tools/debug/debug.h"

namespace polygraphy::tools {
namespace {

RunnerStep backend_step(const std::string& name) {
    if (name == "onnxrt") return OnnxrtRunnerStep{};
    return RefRunnerStep{};
}

}  // namespace

std::string DiffTool::description() const {
    return "[EXPERIMENTAL] Compare two different graphs of one network layer by layer: an fp16, quantized,\n"
           "optimized or re-exported model B against its reference A.\n"
           "\n"
           "Both run on the same inputs. Their tensors are paired by name, by the names quantizers and\n"
           "converters give, by node names and scopes, and by the structure of the graphs. Each pair gets\n"
           "its total error (B against A) and its local error: B's layer run alone on A's values of its\n"
           "inputs. The blame table ranks B's layers by local error.\n"
           "\n"
           "    polygraphy debug diff model.onnx model_fp16.onnx --atol 1e-3 --rtol 1e-3 --report diff.json\n";
}

std::vector<std::unique_ptr<ArgGroup>> DiffTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<DataLoaderArgs>());
    return groups;
}

std::vector<OptionSpec> DiffTool::tool_options() const {
    return {
        // Both models are the tool's own positionals (ModelArgs has one): A, then B.
        Option({"model_a"}).kind(OptionKind::kValue).positional(true).help("Path to the reference model (A)"),
        Option({"model_b"}).kind(OptionKind::kValue).positional(true).help("Path to the model under test (B)"),
        Option({"--input-shapes", "--inputs"})
            .dest("input_shapes")
            .kind(OptionKind::kValues)
            .help("Graph input(s) of A and their shape(s), for the generated data: --input-shapes <name>:<shape>, "
                  "for example --input-shapes image:[1,3,224,224]. B's inputs get the same values"),
        Option({"--backend-a"})
            .choices({"ref", "onnxrt"})
            .help("The backend that runs A: the built-in runtime (ref, the default) or ONNX-Runtime (onnxrt)"),
        Option({"--backend-b"})
            .choices({"ref", "onnxrt"})
            .help("The backend that runs B (default: ref). B's layers run alone on the built-in runtime, or on "
                  "this backend where the built-in runtime lacks an operator"),
        Option({"--atol", "--abs-tol"}).help("Absolute tolerance of every pair (default: 1e-5)"),
        Option({"--rtol", "--rel-tol"}).help("Relative tolerance of every pair, of A's values (default: 1e-5)"),
        Option({"--input-map"})
            .dest("input_map")
            .kind(OptionKind::kValues)
            .metavar("A_NAME:B_NAME")
            .help("Pairs graph inputs with different names; the others pair by name"),
        Option({"--match-file"})
            .dest("match_file")
            .help("A JSON file of tensor pairs ({\"pairs\": [{\"a\": ..., \"b\": ...}]}) that override the pairs "
                  "found; --save-matches writes one"),
        Option({"--save-matches"}).dest("save_matches").help("Save the pairs found to this JSON file"),
        Option({"--report"}).help("Save every pair's figures, the unpaired tensors and the blame table as JSON"),
        Option({"--model-explorer-node-data"})
            .dest("model_explorer")
            .kind(OptionKind::kValues)
            .metavar("A.json B.json")
            .help("Save each graph's local errors as Model Explorer per-node data (load it with \"Add per-node "
                  "data\"): the first file for A, the second for B"),
        Option({"--compare-memory-budget"})
            .dest("compare_memory_budget")
            .metavar("SIZE")
            .help("The most memory B's paired tensors of one sample may take at once, e.g. 512M or 2G (K, M, G: "
                  "KiB, MiB, GiB). When they do not fit, B runs in slices of nodes, each compared and freed before "
                  "the next (A's paired tensors of the sample are kept for the local runs). Defaults to the size of "
                  "B's weights, at least 256M and at least what its largest layer needs"),
        Option({"--top"}).help("Rows of the blame table (default: 10)"),
        Option({"--blame-by"})
            .choices({"error", "gain"})
            .help("What ranks B's layers: 'error', their local relative RMS error (the default), or 'gain', the "
                  "systematic part of it (a layer whose output is off by a factor), which the rounding noise of "
                  "fp16 and int8 leaves near 0"),
    };
}

int DiffTool::run_impl(const ParsedArgs& args) {
    DiffJob job;
    job.a = ModelJob{std::filesystem::absolute(*args.value("model_a")).lexically_normal().string()};
    job.b = ModelJob{std::filesystem::absolute(*args.value("model_b")).lexically_normal().string()};
    job.runner_a = backend_step(args.value("backend_a").value_or("ref"));
    job.runner_b = backend_step(args.value("backend_b").value_or("ref"));
    job.data_loader = arg_group<DataLoaderArgs>().data_loader_job();
    job.data_loader.model_path = job.a.path;  // A's inputs: unnamed test data pairs with them
    if (args.has("input_shapes"))
        job.data_loader.generator.input_metadata =
            args_util::parse_input_shapes("--input-shapes", args.values("input_shapes"));
    job.tolerances.atol =
        args_util::parse_number_option(args.value("atol"), "--atol", true).value_or(job.tolerances.atol);
    job.tolerances.rtol =
        args_util::parse_number_option(args.value("rtol"), "--rtol", true).value_or(job.tolerances.rtol);
    for (const std::string& entry : args.values("input_map")) {
        const std::size_t colon = entry.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size())
            throw UsageError("--input-map: expected A_NAME:B_NAME, got " + python_repr(entry));
        job.matching.input_map.emplace_back(entry.substr(0, colon), entry.substr(colon + 1));
    }
    if (const auto path = args.value("match_file")) job.matching.user = read_match_file(*path);
    if (const auto top = args.value("top")) {
        const auto value = args_util::parse_int(*top);
        if (!value || *value < 1) throw UsageError("--top: expected a count of 1 or more, got " + python_repr(*top));
        job.top = static_cast<std::size_t>(*value);
    }
    if (const auto budget = args.value("compare_memory_budget"))
        job.memory_budget = args_util::parse_memory_budget("--compare-memory-budget", *budget);
    if (args.value("blame_by").value_or("error") == "gain") job.blame_by = BlameFigure::kGain;
    job.save_matches = args.value("save_matches");
    job.report_path = args.value("report");
    if (args.has("model_explorer")) {
        const std::vector<std::string> paths = args.values("model_explorer");
        if (paths.size() != 2)
            throw UsageError("--model-explorer-node-data: expected two files, A's then B's, got " +
                             std::to_string(paths.size()));
        job.model_explorer_paths = std::pair{paths[0], paths[1]};
        args_util::check_destination(paths[0], "--model-explorer-node-data");
        args_util::check_destination(paths[1], "--model-explorer-node-data");
    }
    args_util::check_destination(job.save_matches, "--save-matches");
    args_util::check_destination(job.report_path, "--report");

    const DiffResult result = run_diff_job(job);
    logger().info(format_blame_table(result, job.top));
    logger().info(result.passed ? "PASSED | the graph outputs of B agree with A's within the tolerances"
                                : "FAILED | the graph outputs of B differ from A's beyond the tolerances");
    return result.passed ? 0 : 1;
}

}  // namespace polygraphy::tools
