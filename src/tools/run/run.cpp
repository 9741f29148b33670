#include "tools/run/run.h"

#include <filesystem>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/job/run_job.h"
#include "polygraphy/job/runner_processes.h"
#include "polygraphy/job/script.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/backend/runner_select.h"
#include "tools/args/backend/unavailable.h"
#include "tools/args/comparator/comparator.h"
#include "tools/args/comparator/compare.h"
#include "tools/args/comparator/data_loader.h"
#include "tools/args/comparator/postprocess.h"
#include "tools/args/model.h"
#include "tools/registry.h"

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
    for (auto& group : make_tf_arg_groups(UnavailableArgsFor::kRun)) groups.push_back(std::move(group));
    groups.push_back(std::make_unique<OnnxSaveArgs>(OnnxSaveArgs::Config{"save-onnx", "", false}));
    groups.push_back(std::make_unique<OnnxInferShapesArgs>());
    groups.push_back(std::make_unique<OnnxLoadArgs>());
    for (auto& group : builtin_runner_arg_groups()) groups.push_back(std::move(group));
    for (const auto& module : extension_modules())
        if (module.run_arg_groups)
            for (auto& group : module.run_arg_groups()) groups.push_back(std::move(group));
    for (auto& group : make_trt_arg_groups(UnavailableArgsFor::kRun)) groups.push_back(std::move(group));
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
            .help("Path to save a generated C++ program, that will do exactly what `run` would, through the "
                  "polygraphy C++ API. Build it with: c++ -std=c++20 FILE $(polygraphy-config --cflags --libs)"),
    };
}

bool RunTool::show_start_end_logging(const ParsedArgs& args) const {
    return !args.has("gen_script") && !is_runner_process();  // a runner process's parent says both
}

RunJob RunTool::job() const {
    return describe_job(nullptr);
}

RunJob RunTool::describe_job(std::vector<const ArgGroup*>* undescribed) const {
    RunJob job;
    // Runner groups are added by the selection group, once per selection.
    for (const auto& group : groups().all())
        if (!dynamic_cast<const RunnerArgGroup*>(group.get()) && !group->add_to_job(job) && undescribed)
            undescribed->push_back(group.get());
    return job;
}

namespace {

// The command as Polygraphy logs it ("RUNNING | Command: ..."): the generated program's header and
// the HTML report name it.
std::string command_line(const ParsedArgs& args) {
    std::string command = "polygraphy run";
    for (const auto& token : args.argv) command += " " + token;
    return command;
}

// A group with no part in the job, or a runner that cannot be printed, is fine as long as it was not used.
std::string generate_script(const ArgGroups& groups, const RunJob& job, const std::vector<const ArgGroup*>& undescribed,
                            const ParsedArgs& args, const std::string& path) {
    for (const ArgGroup* group : undescribed) {
        for (const OptionSpec& spec : group->options()) {
            const std::string dest = option_dest(spec);
            if (args.has(dest))
                throw UnsupportedError("--gen-script cannot write " + args.occurrences(dest).front().flag + " (" +
                                       group->title() + ") to a script");
        }
    }
    const auto& selected = groups.get<RunnerSelectArgs>()->selected();
    for (std::size_t i = 0; i < selected.size() && i < job.runners.size(); ++i) {
        const auto* custom = std::get_if<CustomRunnerStep>(&job.runners[i]);
        if (custom && !custom->print)
            throw UnsupportedError("--gen-script cannot write a " + selected[i]->runner_display_name() + " runner (" +
                                   selected[i]->runner_flag() + ") to a script");
    }
    if (job.data_loader.custom || job.compare.custom)
        throw UnsupportedError(
            "--gen-script cannot write a Python hook (--data-loader-script, --compare-func-script) "
            "to a C++ program");
    const std::string command = command_line(args);
    std::string stem = std::filesystem::path(path).stem().string();
    if (stem.empty()) stem = "script";
    return job_program(job, {
                                "Generated by: " + command,
                                "Does what that `polygraphy run` command does, through the polygraphy C++ API. "
                                "Build and run with:",
                                "    c++ -std=c++20 -O2 " + std::filesystem::path(path).filename().string() +
                                    " $(polygraphy-config --cflags --libs) -o " + stem + " && ./" + stem,
                                "Exit status: 0 when every comparison/validation passed, 1 otherwise (as `polygraphy "
                                "run`).",
                            });
}

}  // namespace

int RunTool::run_impl(const ParsedArgs& args) {
    if (!extension_modules().empty()) {
        std::vector<std::string> names;
        for (const auto& module : extension_modules()) names.push_back(module.name);
        logger().verbose("Loaded extension modules: " + python_list_repr(names));
    }

    const auto& model = arg_group<ModelArgs>();
    const auto& runner_select = arg_group<RunnerSelectArgs>();
    if (!model.path() && !runner_select.selected().empty())
        throw UsageError(
            "One or more runners was specified, but no model file was provided. Make sure you've specified the model "
            "path, and also that it's not being consumed as an argument for another parameter");
    if (runner_select.selected().empty()) logger().warning("No runners have been selected. Inference will not be run!");

    const auto script_path = args.value("gen_script");
    const auto& inference = arg_group<ComparatorRunArgs>();
    if (script_path && *script_path == "-")
        throw UsageError("--gen-script -: this build writes the program to a file only; give a path such as run.cpp");
    if (script_path && args.has("save_summary"))
        throw UnsupportedError(
            "--gen-script cannot write --save-summary to a program (its fingerprints come from "
            "the command itself)");
    if (script_path && inference.use_subprocess())
        throw UnsupportedError(
            "--gen-script cannot write --use-subprocess to a program (it runs runners in "
            "processes of the polygraphy tool itself)");
    std::vector<const ArgGroup*> undescribed;
    RunJob job = describe_job(&undescribed);
    job.compare.report_command = command_line(args);
    if (job.compare.summary_path && job.runners.size() < 2)
        throw UsageError("--save-summary needs a comparison: select two runners or more (e.g. --ref --onnxrt)");
    if (job.compare.summary_path && !job.load_outputs_paths.empty())
        throw UsageError(
            "--save-summary summarises the runners' comparison over the dataset; it cannot take --load-outputs, "
            "whose samples it cannot fingerprint");
    if (script_path) {
        const std::string program = generate_script(groups(), job, undescribed, args, *script_path);
        write_file_atomically(*script_path, program);
        logger().info("Writing script to: " + *script_path);
        return 0;
    }
    if (is_runner_process()) {
        run_runner_process(job);  // started by run_job_in_processes() below, in the parent
        return 0;
    }
    if (inference.use_subprocess()) {
        // Each runner process runs this same command line.
        std::vector<std::string> command = {std::filesystem::read_symlink("/proc/self/exe").string(), "run"};
        command.insert(command.end(), args.argv.begin(), args.argv.end());
        return run_job_in_processes(job, {command, inference.subprocess_timeout()}).passed ? 0 : 1;
    }
    return run_job(job).passed ? 0 : 1;
}

}  // namespace polygraphy::tools
