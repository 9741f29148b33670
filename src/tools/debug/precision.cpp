// `debug precision`: the nodes to keep in higher precision (polygraphy/job/precision_job.h).
#include <filesystem>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/job/precision_job.h"
#include "tools/args/comparator/data_loader.h"
#include "tools/args/debug/debug_args.h"
#include "tools/args/util.h"
#include "tools/debug/debug.h"

namespace polygraphy::tools {

std::string PrecisionTool::description() const {
    return "[EXPERIMENTAL] Find the nodes of an ONNX model to keep in higher precision so that its fp16, bf16 or\n"
           "int8 (QDQ) version passes a check on every sample.\n"
           "\n"
           "One `debug diff` replay ranks the nodes by their local error; the shortest ranked prefix that\n"
           "passes is found by bisection; then halves of it, and then single nodes, go back to low precision,\n"
           "least blamed first, while the check passes, until each kept node fails the check when given back\n"
           "alone (1-minimal). The answer\n"
           "is ONNX node names, a block-list JSON for `convert --fp-to-fp16 --block-list-file` and\n"
           "onnxconverter-common, and the mixed model (-o).\n"
           "\n"
           "    polygraphy debug precision model.onnx --precision fp16 --atol 1e-2 --rtol 1e-2 --iterations 8 \\\n"
           "        -o model_mixed.onnx --save-block-list block_list.json\n";
}

std::vector<std::unique_ptr<ArgGroup>> PrecisionTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<CheckCmdArgs>(false));
    groups.push_back(std::make_unique<DataLoaderArgs>());
    return groups;
}

std::vector<OptionSpec> PrecisionTool::tool_options() const {
    return {
        Option({"model_file"}).kind(OptionKind::kValue).positional(true).help("Path to the float32 (int8: QDQ) model"),
        Option({"--precision"})
            .choices({"fp16", "bf16", "int8"})
            .help("The low precision: fp16 (the default) or bf16, where keeping a node means computing it in "
                  "float32; int8 for a QDQ model, where keeping a tensor means removing its QuantizeLinear/"
                  "DequantizeLinear pair"),
        Option({"--input-shapes", "--inputs"})
            .dest("input_shapes")
            .kind(OptionKind::kValues)
            .help("Graph input(s) and their shape(s), for the generated data: --input-shapes <name>:<shape>"),
        Option({"--atol", "--abs-tol"}).help("Absolute tolerance of every graph output (default: 1e-3)"),
        Option({"--rtol", "--rel-tol"}).help("Relative tolerance of every graph output (default: 1e-3)"),
        Option({"--check-error-stat"})
            .choices({"elemwise", "max", "mean"})
            .help("What the tolerances bound: every element (elemwise, the default), or the largest or mean "
                  "difference (an output fails when both its absolute and its relative figure exceed)"),
        Option({"--check-cosine"})
            .metavar("MIN")
            .help("Also require each output's cosine similarity to be MIN or more"),
        Option({"--check-sqnr"}).metavar("DB").help("Also require each output's SQNR to be DB decibels or more"),
        Option({"--search"})
            .choices({"bisect", "greedy", "node-order"})
            .help("How the ranked prefix is found: by bisection (the default) or greedily, one more node at a time. "
                  "node-order: no ranking, segments of nodes in graph order halved while they fail, as "
                  "onnxconverter-common's auto_convert_mixed_precision does (for comparison)"),
        Option({"--op-block-list"})
            .dest("op_block_list")
            .kind(OptionKind::kValues)
            .metavar("OP")
            .help("fp16/bf16: op types kept in float32 from the start, besides the default ones"),
        Option({"-o", "--output"}).help("Save the mixed-precision model here"),
        Option({"--save-block-list"})
            .dest("save_block_list")
            .metavar("FILE.json")
            .help("Save the answer as {\"node_block_list\": [...], \"op_block_list\": [...]} (int8: the nodes that "
                  "read a kept tensor)"),
        Option({"--iter-artifact", "--intermediate-artifact"})
            .dest("iter_artifact")
            .help("With --check: where each candidate model is written for the command (default: "
                  "polygraphy_debug.onnx)"),
    };
}

int PrecisionTool::run_impl(const ParsedArgs& args) {
    PrecisionJob job;
    job.model = ModelJob{*args.value("model_file")};
    const std::string precision = args.value("precision").value_or("fp16");
    job.precision = precision == "bf16"   ? LowPrecision::kBf16
                    : precision == "int8" ? LowPrecision::kInt8
                                          : LowPrecision::kFp16;
    job.data_loader = arg_group<DataLoaderArgs>().data_loader_job();
    job.data_loader.model_path = job.model.path;
    if (args.has("input_shapes"))
        job.data_loader.generator.input_metadata =
            args_util::parse_input_shapes("--input-shapes", args.values("input_shapes"));
    job.check.tolerances.atol =
        args_util::parse_number_option(args.value("atol"), "--atol", true).value_or(job.check.tolerances.atol);
    job.check.tolerances.rtol =
        args_util::parse_number_option(args.value("rtol"), "--rtol", true).value_or(job.check.tolerances.rtol);
    const std::string stat = args.value("check_error_stat").value_or("elemwise");
    job.check.error_stat = stat == "max"    ? PrecisionCheck::ErrorStat::kMax
                           : stat == "mean" ? PrecisionCheck::ErrorStat::kMean
                                            : PrecisionCheck::ErrorStat::kElementwise;
    job.check.min_cosine = args_util::parse_number_option(args.value("check_cosine"), "--check-cosine", false);
    job.check.min_sqnr_db = args_util::parse_number_option(args.value("check_sqnr"), "--check-sqnr", false);
    const std::string search = args.value("search").value_or("bisect");
    job.search = search == "greedy"       ? PrecisionSearch::kGreedy
                 : search == "node-order" ? PrecisionSearch::kNodeOrder
                                          : PrecisionSearch::kBisect;
    job.op_block_list = args.values("op_block_list");
    if (job.precision == LowPrecision::kInt8 && !job.op_block_list.empty())
        throw UsageError("--op-block-list applies to --precision fp16 and bf16");
    job.output_path = args.value("output");
    job.block_list_path = args.value("save_block_list");
    // Refused before the search, which may take long, rather than after it.
    args_util::check_destination(job.output_path, "--output");
    args_util::check_destination(job.block_list_path, "--save-block-list");

    const auto& check = arg_group<CheckCmdArgs>();
    const std::string artifact = args.value("iter_artifact").value_or("polygraphy_debug.onnx");
    if (check.check()) {
        job.check.external = [&check, artifact](const onnx::ModelProto& candidate) {
            save_onnx(candidate, artifact);
            const bool passed = check.run_check(artifact);
            std::error_code ignored;
            std::filesystem::remove(artifact, ignored);
            return passed;
        };
    }
    const PrecisionResult result = run_precision_job(job);
    logger().info(format_precision_result(result, job.precision));
    return 0;
}

}  // namespace polygraphy::tools
