#include "tools/args/comparator/comparator.h"

#include <cmath>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/html_report.h"
#include "polygraphy/tools/python_hooks.h"
#include "tools/args/comparator/compare.h"
#include "tools/args/comparator/data_loader.h"
#include "tools/args/util.h"

namespace polygraphy::tools {

// ---- ComparatorRunArgs ---------------------------------------------------------------------------

std::vector<std::type_index> ComparatorRunArgs::depends_on() const {
    return {std::type_index(typeid(DataLoaderArgs))};
}

std::vector<OptionSpec> ComparatorRunArgs::options() const {
    return {
        Option({"--warm-up"})
            .metavar("NUM")
            .help("Number of warm-up runs before timing inference")
            .type(ValueType::kInt),
        Option({"--use-subprocess"})
            .kind(OptionKind::kFlag)
            .help("Run runners in isolated subprocesses. A runner whose process crashes, fails or times out fails, "
                  "and the other runners' results are still compared"),
        Option({"--subprocess-timeout"})
            .metavar("SECONDS")
            .type(ValueType::kFloat)
            .help("With --use-subprocess: the time after which a runner's process is killed and the runner fails. "
                  "Defaults to no limit"),
        Option({"--save-inputs", "--save-input-data"})
            .dest("save_inputs_path")
            .help("Path to save inference inputs. The inputs (List[Dict[str, numpy.ndarray]]) will be encoded as JSON "
                  "and saved"),
        Option({"--save-outputs", "--save-results"})
            .dest("save_outputs_path")
            .help("Path to save results from runners. The results (RunResults) will be encoded as JSON and saved"),
        Option({"--shard"})
            .metavar("INDEX/COUNT")
            .help("Run one shard of the dataset: every COUNT-th sample, starting at sample INDEX (shards are "
                  "numbered from 0; every sample is still read, to fingerprint the dataset). `auto` takes the "
                  "shard from a Slurm job array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) or a Kubernetes "
                  "Indexed Job (JOB_COMPLETION_INDEX, and JOB_COMPLETIONS set in its manifest). With "
                  "--save-summary, `polygraphy data merge` adds the shards' summaries up"),
    };
}

void ComparatorRunArgs::parse(const ParsedArgs& args) {
    use_subprocess_ = args.flag("use_subprocess");
    subprocess_timeout_.reset();
    if (auto text = args.value("subprocess_timeout")) {
        const auto seconds = args_util::parse_float(*text);
        if (!seconds || !(*seconds > 0) || !std::isfinite(*seconds))
            throw UsageError("Invalid value for --subprocess-timeout: " + python_repr(*text) +
                             ". Expected a positive number of seconds");
        if (!use_subprocess_) throw UsageError("--subprocess-timeout needs --use-subprocess");
        subprocess_timeout_ = *seconds;
    }
    warm_up_ = 0;
    if (auto text = args.value("warm_up")) {
        const auto value = args_util::parse_int(*text);
        if (!value || *value < 0 || *value > 1000000)
            throw UsageError("Invalid value for --warm-up: " + python_repr(*text) +
                             ". Expected a number of runs between 0 and 1000000");
        warm_up_ = static_cast<int>(*value);
    }
    save_inputs_path_ = args.value("save_inputs_path");
    save_outputs_path_ = args.value("save_outputs_path");
    shard_.reset();
    if (const auto shard = args.value("shard")) shard_ = args_util::parse_shard(*shard);
}

Comparator::RunOptions ComparatorRunArgs::run_options() const {
    Comparator::RunOptions options;
    options.warm_up = warm_up_;
    options.save_inputs_path = save_inputs_path_;
    return options;
}

// ---- ComparatorCompareArgs -----------------------------------------------------------------------

std::vector<std::type_index> ComparatorCompareArgs::depends_on() const {
    return {std::type_index(typeid(CompareFuncSimpleArgs)), std::type_index(typeid(CompareFuncIndicesArgs))};
}

std::vector<OptionSpec> ComparatorCompareArgs::options() const {
    return {
        Option({"--validate"}).kind(OptionKind::kFlag).help("Check outputs for NaNs and Infs"),
        Option({"--fail-fast"}).kind(OptionKind::kFlag).help("Fail fast (stop comparing after the first failure)"),
        Option({"--compare", "--compare-func"})
            .dest("compare")
            .help("Name of the function to use to perform comparison. See the API documentation for `CompareFunc` for "
                  "details. Defaults to 'simple'.")
            .choices({"simple", "indices"}),
        Option({"--compare-func-script"})
            .help(
                "[EXPERIMENTAL] Path to a Python script that defines a function that can compare two iteration "
                "results. This function must have a signature of: `(IterationResult, IterationResult) -> "
                "OrderedDict[str, bool]`. For details, see the API documentation for `Comparator.compare_accuracy()`. "
                "If provided, this will override all other comparison function options. By default, Polygraphy "
                "looks for a function called `compare_outputs`. You can specify a custom function name by "
                "separating it with a colon. For example: `my_custom_script.py:my_func`. Needs the Python bindings"),
        Option({"--compare-func-name"})
            .help("[DEPRECATED - function name can be specified with --compare-func-script like so: "
                  "`my_custom_script.py:my_func`] When using a compare-func-script, this specifies the name of the "
                  "function that compares outputs. Defaults to `compare_outputs`."),
        Option({"--load-outputs", "--load-results"})
            .dest("load_outputs_paths")
            .kind(OptionKind::kValues)
            .help("Path(s) to load results from runners prior to comparing. Each file should be a JSON-ified "
                  "RunResults"),
        Option({"--report"})
            .metavar("FILE")
            .help("Write every compared tensor's error figures, and the first node whose output diverged while "
                  "its inputs agreed, to this file (with --onnx-outputs mark all this covers every layer). A path "
                  "ending in .html gives a self-contained page: the per-layer error profile, a sortable table, "
                  "histograms of both outputs and their differences, and the graph coloured by error; any other "
                  "path gives JSON"),
        Option({"--suggest-tolerances"})
            .dest("suggest_tolerances")
            .kind(OptionKind::kOptionalValue)
            .const_value("1")
            .metavar("PASS_RATE")
            .help("After the comparison, print per-output --atol and --rtol values that the elements of every "
                  "sample pass (each figure rounded up to two digits; half of it fails the worst sample), ready "
                  "to paste. With --iterations N or --load-inputs, over all their samples. PASS_RATE (default 1: "
                  "every element) below 1 asks for that fraction of each sample's elements, checked with "
                  "--check-error-stat quantile --error-quantile PASS_RATE (it sets the comparison's error "
                  "quantile)"),
        Option({"--compare-memory-budget"})
            .metavar("SIZE")
            .help("The most memory the runners' outputs may take at once while they are compared, e.g. 512M or 2G "
                  "(K, M, G: KiB, MiB, GiB). When the outputs of a run do not fit (--onnx-outputs mark all on a "
                  "large model), the graph is cut into slices of nodes: each runner runs each slice, fed by its own "
                  "earlier slices, and each slice is compared and freed before the next; the results of the "
                  "comparison are the same (ONNX Runtime's per-session layout choices aside, see README). "
                  "--save-outputs to an .npz is written slice by slice; to JSON, and with --load-outputs or "
                  "--use-subprocess, every output is held at once. Defaults to the size of the model's weights, "
                  "at least 256M and at least what the largest layer needs"),
        Option({"--session-memory-budget"})
            .metavar("SIZE")
            .help("The most weights one ONNX Runtime session may hold, e.g. 8G (K, M, G: KiB, MiB, GiB). A model "
                  "whose weights exceed it, compared by --onnxrt and another runner, runs in slices of nodes whose "
                  "weights fit: each runner builds a session of each slice, runs it and releases it before the "
                  "next, and only the model's outputs (or those --onnx-outputs marks) are compared. Defaults to a "
                  "quarter of the machine's memory"),
        Option({"--save-summary"})
            .metavar("FILE.json")
            .help("Save the dataset summary of the run (or of its --shard): per output, and per layer with "
                  "--onnx-outputs mark all, each sample's verdict and figures, the counts, sums and maxima of the "
                  "figures, error histograms on fixed decade bins, and each failing sample's first divergence; "
                  "no tensors. With the fingerprints of the model, the dataset and the options, so that "
                  "`polygraphy data merge` adds up the shards of one run and refuses anything else"),
        Option({"--model-explorer-node-data"})
            .metavar("FILE.json")
            .help("Write each compared output's maximum absolute error as Model Explorer per-node data (the first "
                  "comparison, iteration 0), to overlay on the graph in Google's Model Explorer"),
    };
}

void ComparatorCompareArgs::parse(const ParsedArgs& args) {
    // Python is loaded only for this flag (polygraphy/tools/python_hooks.h).
    script_compare_ = {};
    if (const auto script = python_hooks::script_function_argument(args, "--compare-func-script", "--compare-func-name",
                                                                   "compare_outputs"))
        script_compare_ =
            python_hooks::bridge("--compare-func-script").compare_func_from_script(script->path, script->function);
    validate_ = args.flag("validate");
    fail_fast_ = args.flag("fail_fast");
    load_outputs_paths_ = args.values("load_outputs_paths");
    report_path_ = args.value("report");
    suggest_tolerances_.reset();
    if (const auto rate = args.value("suggest_tolerances")) {
        const auto value = args_util::parse_float(*rate);
        if (!value || !(*value > 0 && *value <= 1))
            throw UsageError("--suggest-tolerances: expected an element pass rate in (0, 1], got " +
                             python_repr(*rate));
        if (*value < 1 && args.has("error_quantile"))
            throw UsageError("--suggest-tolerances " + *rate +
                             " sets the error quantile to the pass rate: leave out --error-quantile");
        suggest_tolerances_ = *value;
    }
    model_explorer_path_ = args.value("model_explorer_node_data");
    summary_path_ = args.value("save_summary");
    if (summary_path_) {
        if (args.value("compare").value_or("simple") != "simple")
            throw UsageError("--save-summary needs the simple comparison function (--compare simple)");
        args_util::check_destination(summary_path_, "--save-summary");
    }
    if (const auto budget = args.value("compare_memory_budget"))
        memory_budget_ = args_util::parse_memory_budget("--compare-memory-budget", *budget);
    session_memory_budget_.reset();
    if (const auto budget = args.value("session_memory_budget"))
        session_memory_budget_ = args_util::parse_memory_budget("--session-memory-budget", *budget);
    compare_func_ = args.value("compare").value_or("simple");

    // Options of the comparison function that was not selected are ignored, with a warning.
    std::vector<std::pair<std::string, std::vector<std::string>>> unselected;
    if (compare_func_ != "simple")
        unselected.push_back({"simple", required_group<CompareFuncSimpleArgs>().option_dests()});
    if (compare_func_ != "indices") unselected.push_back({"indices", {"index_tolerance"}});
    for (const auto& [name, dests] : unselected) {
        for (const auto& dest : dests) {
            if (!args.has(dest)) continue;
            logger().warning(
                "Option: " + args.occurrences(dest).front().flag + " is only valid for comparison function: '" + name +
                "'. The selected comparison function is: '" + compare_func_ + "', so this option will be ignored.");
        }
    }
}

CompareJob ComparatorCompareArgs::compare_job() const {
    CompareJob compare;
    compare.fail_fast = fail_fast_;
    compare.report_path = report_path_;
    compare.suggest_tolerances = suggest_tolerances_;
    compare.model_explorer_path = model_explorer_path_;
    compare.summary_path = summary_path_;
    compare.memory_budget = memory_budget_;
    compare.session_memory_budget = session_memory_budget_;
    compare.custom = script_compare_;
    if (compare_func_ == "indices") {
        compare.function = CompareJob::Function::kIndices;
        compare.index_tolerance = required_group<CompareFuncIndicesArgs>().index_tolerance();
    } else {
        compare.simple = required_group<CompareFuncSimpleArgs>().compare_options();
        compare.simple.fail_fast = fail_fast_;
        // The HTML report's histograms are taken while comparing.
        compare.simple.collect_distributions = report_path_ && is_html_report_path(*report_path_);
        if (suggest_tolerances_ && *suggest_tolerances_ < 1)
            compare.simple.error_quantile = {{"", *suggest_tolerances_}};
    }
    return compare;
}

CompareFunc ComparatorCompareArgs::compare_func() const {
    return build_compare_func(compare_job());
}

bool ComparatorRunArgs::add_to_job(RunJob& job) const {
    job.inference = run_options();
    job.save_outputs_path = save_outputs_path_;
    job.data_loader.shard = shard_;
    return true;
}

bool ComparatorCompareArgs::add_to_job(RunJob& job) const {
    job.load_outputs_paths = load_outputs_paths_;
    job.compare = compare_job();
    job.validate = validate_;
    return true;
}

}  // namespace polygraphy::tools
