// `polygraphy inspect capability`.
#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnxrt/capability.h"
#include "polygraphy/backend/ref/evaluator.h"

#include "polygraphy/common/logger.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/model.h"
#include "tools/inspect/inspect.h"

namespace polygraphy::tools {

std::string InspectCapabilityTool::description() const {
    return "Determine the capability of a backend to run an ONNX graph. The graph is partitioned into supported "
           "and unsupported subgraphs.\n";
}

std::vector<std::unique_ptr<ArgGroup>> InspectCapabilityTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, ""}));
    groups.push_back(std::make_unique<OnnxLoadArgs>());
    return groups;
}

std::vector<OptionSpec> InspectCapabilityTool::tool_options() const {
    return {
        Option({"--backend"})
            .choices({"ref", "onnxrt"})
            .help("The backend whose capability to check: 'ref' (the built-in runtime) or 'onnxrt' (ONNX-Runtime). "
                  "Defaults to 'ref'"),
        Option({"--with-partitioning"})
            .kind(OptionKind::kFlag)
            .help("Whether to partition the model graph on the nodes the backend cannot run. Always done in this "
                  "build"),
        Option({"--onnxrt-custom-op-libs"})
            .kind(OptionKind::kValues)
            .metavar("LIB")
            .help("With --backend onnxrt: ONNX-Runtime custom-op libraries (exporting RegisterCustomOps) to load, so "
                  "that their operators count as supported"),
        Option({"-o", "--output"})
            .dest("output")
            .help("Folder to save the subgraphs and results.txt in. Defaults to 'polygraphy_capability_dumps'"),
    };
}

int InspectCapabilityTool::run_impl(const ParsedArgs& args) {
    const std::string backend = args.value("backend").value_or("ref");
    const std::string output = args.value("output").value_or("polygraphy_capability_dumps");
    // Fail on an unavailable backend before loading a possibly large model.
    const std::vector<std::string> libraries = args.values("onnxrt_custom_op_libs");
    if (!libraries.empty() && backend != "onnxrt")
        throw UsageError("--onnxrt-custom-op-libs needs --backend onnxrt");
    NodeChecker checker = backend == "onnxrt" ? onnxrt_node_checker(libraries) : ref_node_checker();
    const std::string display = backend == "onnxrt" ? "ONNX-Runtime" : "the built-in runtime (ref)";

    const OnnxModel model = arg_group<OnnxLoadArgs>().onnx_loader()();
    infer_value_info(*model);
    const CapabilityReport report = check_capability(*model, checker, display);
    if (report.fully_supported()) {
        logger().info("Graph is fully supported by " + display + "; Will not generate subgraphs.");
        return 0;
    }
    logger().info(report.summary());
    save_capability_results(*model, report, output);
    return 0;
}

}  // namespace polygraphy::tools
