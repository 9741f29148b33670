#include "tools/data/data.h"

#include <fmt/format.h>

#include "polygraphy/backend/onnx/test_data.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/run_results.h"
#include "polygraphy/job/saved_data.h"

namespace polygraphy::tools {
namespace {

// The runner whose outputs are converted: the only one, or the one --runner names.
const RunResults::Entry& pick_runner(const RunResults& results, const std::optional<std::string>& runner,
                                     const std::string& path) {
    std::vector<std::string> names;
    for (const auto& entry : results.lst) names.push_back("'" + entry.first + "'");
    for (const auto& entry : results.lst)
        if (runner ? entry.first == *runner : results.size() == 1) return entry;
    if (runner)
        throw UsageError(fmt::format("{} has no runner named '{}'\nNote: its runners are: {}", path, *runner,
                                     fmt::join(names, ", ")));
    throw UsageError(
        fmt::format("{} holds the results of {} runners; choose one with --runner\nNote: its runners are: {}", path,
                    results.size(), fmt::join(names, ", ")));
}

}  // namespace

std::string DataConvertTool::description() const {
    return "Convert inputs and inference results between Polygraphy's JSON files and ONNX test-data folders\n"
           "(test_data_set_N/input_K.pb, output_K.pb).\n";
}

std::vector<OptionSpec> DataConvertTool::tool_options() const {
    return {
        Option({"--load-inputs"})
            .help("Inputs to convert: a JSON file written by --save-inputs, or a test-data folder"),
        Option({"--load-outputs"})
            .help("Inference results to convert: a JSON file written by --save-outputs, or a test-data folder"),
        Option({"--runner"}).help("With --load-outputs holding several runners: the runner whose outputs to convert"),
        Option({"--save-inputs"}).help("Path to save the inputs as a JSON file usable with --load-inputs"),
        Option({"--save-outputs"})
            .help("Path to save the outputs as a RunResults JSON file usable with --load-outputs"),
        Option({"--save-test-data"})
            .help("Folder to save the inputs and/or outputs to as ONNX test data: one test_data_set_N folder per "
                  "iteration"),
    };
}

int DataConvertTool::run_impl(const ParsedArgs& args) {
    const auto load_inputs_path = args.value("load_inputs");
    const auto load_outputs_path = args.value("load_outputs");
    const auto save_inputs_path = args.value("save_inputs");
    const auto save_outputs_path = args.value("save_outputs");
    const auto save_test_data_path = args.value("save_test_data");
    if (!load_inputs_path && !load_outputs_path)
        throw UsageError("Nothing to convert: give --load-inputs and/or --load-outputs");
    if (!save_inputs_path && !save_outputs_path && !save_test_data_path)
        throw UsageError("Nowhere to save: give --save-inputs, --save-outputs and/or --save-test-data");
    if (save_inputs_path && !load_inputs_path) throw UsageError("--save-inputs needs --load-inputs");
    if (save_outputs_path && !load_outputs_path) throw UsageError("--save-outputs needs --load-outputs");
    if (args.has("runner") && !load_outputs_path) throw UsageError("--runner needs --load-outputs");

    // Everything is read before anything is written.
    const InputList inputs = load_inputs_path ? load_saved_inputs(*load_inputs_path) : InputList{};
    RunResults outputs;
    if (load_outputs_path) {
        const RunResults loaded = load_saved_results(*load_outputs_path);
        const RunResults::Entry& entry = pick_runner(loaded, args.value("runner"), *load_outputs_path);
        outputs.add(entry.second, entry.first);
    }
    std::vector<TensorMap> output_maps;
    for (const auto& [runner, iterations] : outputs)
        for (const auto& iteration : iterations) output_maps.push_back(iteration.outputs);
    if (save_test_data_path && load_inputs_path && load_outputs_path && inputs.size() != output_maps.size())
        throw PolygraphyException(
            fmt::format("Cannot pair the data into test-data sets: {} holds {} iteration(s), {} "
                        "holds {}",
                        *load_inputs_path, inputs.size(), *load_outputs_path, output_maps.size()));

    if (save_inputs_path) save_inputs(inputs, *save_inputs_path);
    if (save_outputs_path) outputs.save(*save_outputs_path);
    if (save_test_data_path) save_test_data(*save_test_data_path, inputs, output_maps);
    return 0;
}

}  // namespace polygraphy::tools
