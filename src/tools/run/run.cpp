#include "polygraphy/tools/run/run.h"

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/comparator.h"
#include "polygraphy/comparator/divergence.h"
#include "polygraphy/tools/args/backend/onnx/loader.h"
#include "polygraphy/tools/args/backend/runner_select.h"
#include "polygraphy/tools/args/backend/unavailable.h"
#include "polygraphy/tools/args/comparator/comparator.h"
#include "polygraphy/tools/args/comparator/compare.h"
#include "polygraphy/tools/args/comparator/data_loader.h"
#include "polygraphy/tools/args/comparator/postprocess.h"
#include "polygraphy/tools/args/model.h"
#include "polygraphy/tools/args/util.h"
#include "polygraphy/tools/registry.h"

namespace polygraphy::tools {

std::string RunTool::description() const {
    return "Run inference and compare results across backends.\n"
           "\n"
           "The typical usage of `run` is:\n"
           "\n"
           "    polygraphy run [model_file] [runners...] [runner_options...]\n"
           "\n"
           "`run` will then run inference on the specified model with all the specified runners\n"
           "and compare inference outputs between them.\n";
}

std::vector<std::unique_ptr<ArgGroup>> RunTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<RunnerSelectArgs>());
    groups.push_back(std::make_unique<ModelArgs>());
    for (auto& group : make_tf_arg_groups()) groups.push_back(std::move(group));
    groups.push_back(std::make_unique<OnnxSaveArgs>(OnnxSaveArgs::Config{"save-onnx", "", false}));
    groups.push_back(std::make_unique<OnnxInferShapesArgs>());
    groups.push_back(std::make_unique<OnnxLoadArgs>());
    for (auto& group : builtin_runner_arg_groups()) groups.push_back(std::move(group));
    for (const auto& module : extension_modules())
        if (module.run_arg_groups)
            for (auto& group : module.run_arg_groups()) groups.push_back(std::move(group));
    for (auto& group : make_trt_arg_groups()) groups.push_back(std::move(group));
    groups.push_back(std::make_unique<DataLoaderArgs>());
    groups.push_back(std::make_unique<ComparatorRunArgs>());
    groups.push_back(std::make_unique<ComparatorPostprocessArgs>());
    groups.push_back(std::make_unique<ComparatorCompareArgs>());
    groups.push_back(std::make_unique<CompareFuncSimpleArgs>());
    groups.push_back(std::make_unique<CompareFuncIndicesArgs>());
    return groups;
}

std::vector<OptionSpec> RunTool::tool_options() const {
    return {
        Option({"--gen", "--gen-script"})
            .dest("gen_script")
            .help("Path to save a generated Python script, that will do exactly what `run` would. Not available in "
                  "this build"),
    };
}

bool RunTool::show_start_end_logging(const ParsedArgs& args) const {
    return !args.has("gen_script");
}

int RunTool::run_impl(const ParsedArgs& args) {
    if (args.has("gen_script"))
        throw UnsupportedError("--gen-script is not available in this build (it generates Python scripts)");
    if (!extension_modules().empty()) {
        std::vector<std::string> names;
        for (const auto& module : extension_modules()) names.push_back(module.name);
        logger().verbose("Loaded extension modules: " + args_util::python_list_repr(names));
    }

    const auto& model = arg_group<ModelArgs>();
    const auto& runner_select = arg_group<RunnerSelectArgs>();
    if (!model.path() && !runner_select.selected().empty())
        throw UsageError(
            "One or more runners was specified, but no model file was provided. Make sure you've specified the model "
            "path, and also that it's not being consumed as an argument for another parameter");
    if (runner_select.selected().empty()) logger().warning("No runners have been selected. Inference will not be run!");

    const auto& run_args = arg_group<ComparatorRunArgs>();
    const auto& compare_args = arg_group<ComparatorCompareArgs>();

    std::vector<std::unique_ptr<BaseRunner>> runners = runner_select.make_runners();
    std::vector<BaseRunner*> runner_ptrs;
    for (const auto& runner : runners) runner_ptrs.push_back(runner.get());

    RunResults results;
    if (!runners.empty()) {
        const DataLoaderFn data_loader = arg_group<DataLoaderArgs>().get_data_loader();
        results = Comparator::run(runner_ptrs, data_loader, run_args.run_options());
    }
    if (run_args.save_outputs_path()) results.save(*run_args.save_outputs_path());
    for (const auto& path : compare_args.load_outputs_paths()) results.extend(RunResults::load(path));

    bool success = true;
    if (runners.size() > 1 || !compare_args.load_outputs_paths().empty()) {
        const AccuracyResult accuracy =
            Comparator::compare_accuracy(results, compare_args.compare_func(), compare_args.fail_fast());
        success = static_cast<bool>(accuracy) && success;
        // Beyond Polygraphy: name the node where the runners started to disagree, so nobody has to
        // read hundreds of per-layer comparisons (most useful with --onnx-outputs mark all).
        std::optional<Divergence> divergence;
        if (!accuracy && model.path()) {
            const OnnxModel onnx_model = arg_group<OnnxLoadArgs>().onnx_loader()();
            divergence = find_first_divergence(onnx_model->graph(), accuracy);
            if (divergence) logger().error(describe_divergence(*divergence));
        }
        if (compare_args.report_path()) {
            save_accuracy_report(accuracy, divergence, *compare_args.report_path());
            logger().info("Saving accuracy report to " + *compare_args.report_path());
        }
    }
    if (compare_args.validate()) success = Comparator::validate(results, true, true) && success;
    return success ? 0 : 1;
}

}  // namespace polygraphy::tools
