#include "tools/check/check.h"

#include "backend/onnx/unchecked_load.h"

#include "polygraphy/backend/onnx/lint.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/data_loader.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/comparator/data_loader.h"
#include "tools/args/model.h"

namespace polygraphy::tools {

std::unique_ptr<Tool> make_check_tool() {
    return std::make_unique<DispatchingTool>("check", "Check and validate various aspects of a model\n",
                                             "Check Subtools",
                                             std::vector<DispatchingTool::SubtoolFactory>{make_subtool<CheckLintTool>});
}

std::string CheckLintTool::description() const {
    return "[EXPERIMENTAL] Topologically \"lint\" an ONNX model to find faulty nodes in the graph.\n"
           "All nodes that depend on a faulty node will be marked as faulty and ignored.\n"
           "\n"
           "All error messages and warnings are captured in a JSON report with a 'summary' (passing and\n"
           "failing nodes) and 'lint_entries' (level, source, message and, for node findings, nodes).\n"
           "This build runs libonnx's checker, its own graph checks and a test inference on the built-in\n"
           "runtime, and reports every independent problem.\n";
}

std::vector<std::unique_ptr<ArgGroup>> CheckLintTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, "inputs"}));
    groups.push_back(std::make_unique<OnnxLoadArgs>());
    groups.push_back(std::make_unique<DataLoaderArgs>());
    return groups;
}

std::vector<OptionSpec> CheckLintTool::tool_options() const {
    return {
        Option({"-o", "--output"}).help("Path to save json report."),
        Option({"--providers", "--execution-providers"})
            .dest("providers")
            .kind(OptionKind::kValues)
            .help("Accepted for compatibility: ONNX-Runtime execution providers. This build's test inference runs "
                  "on the built-in runtime, so they are ignored (with a warning)"),
    };
}

int CheckLintTool::run_impl(const ParsedArgs& args) {
    const auto output = args.value("output");
    if (args.has("providers"))
        logger().warning("--providers is ignored: the test inference of `check lint` runs on the built-in runtime");
    OnnxModel model;
    try {
        // Without the node check: lint reports malformed nodes as findings and lints the rest around them.
        const ModelJob job = arg_group<OnnxLoadArgs>().model_job();
        model = onnx_from_path_unchecked(job.path, job.external_data_dir, job.ignore_external_data);
        for (const ModelStep& step : job.steps) apply_model_step(model, step);
    } catch (const FormatError& error) {
        LintReport report;
        report.add(LintLevel::kException, kLintSourceLoader, error.what());
        if (output) report.save(*output);
        logger().error(std::string("Invalid ONNX model given: ") + error.what());
        return 1;
    }

    const DataLoaderFn loader = arg_group<DataLoaderArgs>().get_data_loader();
    const bool loaded = !arg_group<DataLoaderArgs>().is_using_random_data();
    LintOptions options;
    options.make_feed = [&](const TensorMetadata& metadata) {
        auto feed = loader(0, metadata);
        if (!feed) throw PolygraphyException("the data loader provided no inputs");
        return loaded ? coerce_feed(*feed, metadata) : *feed;
    };
    const LintReport report = lint_onnx(*model, options);
    if (output) report.save(*output);
    return report.valid() ? 0 : 1;
}

}  // namespace polygraphy::tools
