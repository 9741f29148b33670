#include "polygraphy/tools/args/comparator/comparator.h"

#include <filesystem>
#include "polygraphy/tools/args/backend/onnx/loader.h"
#include "polygraphy/tools/args/model.h"
#include "polygraphy/tools/script.h"

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/html_report.h"
#include "polygraphy/tools/args/comparator/compare.h"
#include "polygraphy/tools/args/comparator/data_loader.h"
#include "polygraphy/tools/args/comparator/postprocess.h"
#include "polygraphy/tools/args/util.h"

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
            .help("Run runners in isolated subprocesses. Not available in this build"),
        Option({"--save-inputs", "--save-input-data"})
            .dest("save_inputs_path")
            .help("Path to save inference inputs. The inputs (List[Dict[str, numpy.ndarray]]) will be encoded as JSON "
                  "and saved"),
        Option({"--save-outputs", "--save-results"})
            .dest("save_outputs_path")
            .help("Path to save results from runners. The results (RunResults) will be encoded as JSON and saved"),
    };
}

void ComparatorRunArgs::parse(const ParsedArgs& args) {
    if (args.flag("use_subprocess")) throw UnsupportedError("--use-subprocess is not available in this build");
    warm_up_ = 0;
    if (auto text = args.value("warm_up")) {
        const auto value = args_util::parse_int(*text);
        if (!value || *value < 0 || *value > 1000000)
            throw UsageError("Invalid value for --warm-up: " + args_util::python_repr(*text) +
                             ". Expected a number of runs between 0 and 1000000");
        warm_up_ = static_cast<int>(*value);
    }
    save_inputs_path_ = args.value("save_inputs_path");
    save_outputs_path_ = args.value("save_outputs_path");
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
            .help("[EXPERIMENTAL] Path to a Python script that defines a function that can compare two iteration "
                  "results. Not available in this build"),
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
        Option({"--model-explorer-node-data"})
            .metavar("FILE.json")
            .help("Write each compared output's maximum absolute error as Model Explorer per-node data (the first "
                  "comparison, iteration 0), to overlay on the graph in Google's Model Explorer"),
    };
}

void ComparatorCompareArgs::parse(const ParsedArgs& args) {
    if (args.has("compare_func_script"))
        throw UnsupportedError("--compare-func-script is not available in this build (it runs Python code)");
    validate_ = args.flag("validate");
    fail_fast_ = args.flag("fail_fast");
    load_outputs_paths_ = args.values("load_outputs_paths");
    report_path_ = args.value("report");
    model_explorer_path_ = args.value("model_explorer_node_data");
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

CompareFunc ComparatorCompareArgs::compare_func() const {
    if (compare_func_ == "indices")
        return compare_func::indices(required_group<CompareFuncIndicesArgs>().index_tolerance(), fail_fast_);
    return compare_func::simple(simple_compare_options());
}

SimpleCompareOptions ComparatorCompareArgs::simple_compare_options() const {
    SimpleCompareOptions options = required_group<CompareFuncSimpleArgs>().compare_options();
    options.fail_fast = fail_fast_;
    options.collect_distributions = report_path_ && is_html_report_path(*report_path_);
    return options;
}

bool ComparatorRunArgs::add_to_script(Script& script) const {
    script.add_include("polygraphy/comparator/comparator.h");
    script.add_include("polygraphy/common/run_results.h");
    std::string code = "RunResults results;\n";
    if (script.runner_count() > 0) {
        code +=
            "std::vector<BaseRunner*> runner_ptrs;\n"
            "for (const auto& runner : runners) runner_ptrs.push_back(runner.get());\n"
            "Comparator::RunOptions run_options;\n";
        if (warm_up_) code += "run_options.warm_up = " + std::to_string(warm_up_) + ";\n";
        if (save_inputs_path_) code += "run_options.save_inputs_path = " + Script::quote(*save_inputs_path_) + ";\n";
        code += "results = Comparator::run(runner_ptrs, data_loader, run_options);\n";
    }
    if (save_outputs_path_) code += "results.save(" + Script::quote(*save_outputs_path_) + ");\n";
    script.append_suffix(code);
    return true;
}

bool ComparatorCompareArgs::add_to_script(Script& script) const {
    script.add_include("polygraphy/comparator/comparator.h");
    std::string code;
    for (const auto& path : load_outputs_paths_)
        code += "results.extend(RunResults::load(" + Script::quote(path) + "));\n";
    // As Polygraphy: loaded results are post-processed too, saved outputs are not.
    if (const auto* postprocess = group<ComparatorPostprocessArgs>(); postprocess && postprocess->enabled()) {
        if (!code.empty()) script.append_suffix(code);
        code.clear();
        postprocess->add_postprocess_to_script(script, "results");
    }
    if (script.runner_count() > 1 || !load_outputs_paths_.empty()) {
        std::string compare_func;
        if (compare_func_ == "indices") {
            code += "PerOutput<int64_t> index_tolerance;\n";
            for (const auto& [name, value] : required_group<CompareFuncIndicesArgs>().index_tolerance())
                code += "index_tolerance.set(" + Script::quote(name) + ", " + std::to_string(value) + ");\n";
            compare_func = std::string("compare_func::indices(index_tolerance") + (fail_fast_ ? ", true" : "") + ")";
        } else {
            const SimpleCompareOptions options = simple_compare_options();
            static const char* kStats[] = {"kElemwise", "kMax", "kMean", "kMedian", "kQuantile"};
            code += "SimpleCompareOptions compare_options;\n";
            if (!options.check_shapes) code += "compare_options.check_shapes = false;\n";
            for (const auto& [name, value] : options.rtol)
                code += "compare_options.rtol.set(" + Script::quote(name) + ", " + Script::number(value) + ");\n";
            for (const auto& [name, value] : options.atol)
                code += "compare_options.atol.set(" + Script::quote(name) + ", " + Script::number(value) + ");\n";
            for (const auto& [name, value] : options.check_error_stat)
                code += "compare_options.check_error_stat.set(" + Script::quote(name) +
                        ", ErrorStat::" + kStats[static_cast<int>(value)] + ");\n";
            for (const auto& [name, value] : options.error_quantile)
                code += "compare_options.error_quantile.set(" + Script::quote(name) + ", " + Script::number(value) +
                        ");\n";
            if (options.infinities_compare_equal) code += "compare_options.infinities_compare_equal = true;\n";
            if (options.collect_distributions) code += "compare_options.collect_distributions = true;\n";
            if (options.save_heatmaps)
                code += "compare_options.save_heatmaps = " + Script::quote(*options.save_heatmaps) + ";\n";
            if (options.show_heatmaps) code += "compare_options.show_heatmaps = true;\n";
            if (options.save_error_metrics_plot)
                code += "compare_options.save_error_metrics_plot = " + Script::quote(*options.save_error_metrics_plot) +
                        ";\n";
            if (options.show_error_metrics_plot) code += "compare_options.show_error_metrics_plot = true;\n";
            if (fail_fast_) code += "compare_options.fail_fast = true;\n";
            compare_func = "compare_func::simple(compare_options)";
        }
        code += "const AccuracyResult accuracy = Comparator::compare_accuracy(results, " + compare_func +
                (fail_fast_ ? ", true" : "") + ");\n";
        code += "success = static_cast<bool>(accuracy) && success;\n";
        // As `run` does: name the node where the runners started to disagree, then write the reports.
        const auto* model = group<ModelArgs>();
        const auto* onnx = group<OnnxLoadArgs>();
        const bool with_model = model && model->path() && onnx;
        code += "std::optional<Divergence> divergence;\n";
        script.add_include("polygraphy/comparator/divergence.h");
        if (with_model) {
            // The model is loaded again only when something needs its graph (as `run` does).
            const std::string loader = onnx->add_onnx_loader(script);
            std::string graph = loader + "()->graph()";
            if (report_path_) {
                code += "const OnnxModel model = " + loader + "();\n";
                graph = "model->graph()";
            }
            code +=
                "if (!accuracy) {\n"
                "    divergence = find_first_divergence(" +
                graph +
                ", accuracy);\n"
                "    if (divergence) logger().error(describe_divergence(*divergence));\n"
                "}\n";
        }
        if (report_path_) {
            script.add_include("polygraphy/comparator/html_report.h");
            code += "ReportContext report_context;\n";
            if (with_model) {
                code += "report_context.title = " +
                        Script::quote(std::filesystem::path(*model->path()).filename().string()) + ";\n";
                code += "report_context.graph = &model->graph();\n";
            }
            code += "save_comparison_report(accuracy, divergence, report_context, " + Script::quote(*report_path_) +
                    ");\n"
                    "logger().info(" +
                    Script::quote("Saving accuracy report to " + *report_path_) + ");\n";
        }
        if (model_explorer_path_) {
            script.add_include("polygraphy/comparator/model_explorer.h");
            code += "save_model_explorer_node_data(accuracy, " + Script::quote(*model_explorer_path_) +
                    ");\n"
                    "logger().info(" +
                    Script::quote("Saving Model Explorer node data to " + *model_explorer_path_) + ");\n";
        }
    }
    if (validate_) code += "success = Comparator::validate(results, true, true) && success;\n";
    if (!code.empty()) script.append_suffix(code);
    return true;
}

}  // namespace polygraphy::tools
