#include "tools/surgeon/surgeon.h"

#include <sstream>

#include "polygraphy/backend/onnx/sparsity.h"
#include "polygraphy/backend/onnx/weight_strip.h"
#include "polygraphy/common/file_io.h"
#include "tools/args/model.h"
#include "tools/surgeon/model_io.h"

namespace polygraphy::tools {
namespace {

// The groups of Polygraphy's three weight subtools: a required ONNX model, loading without
// shape inference or output options, and a required -o.
std::vector<std::unique_ptr<ArgGroup>> weight_tool_groups() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, ""}));
    groups.push_back(std::make_unique<OnnxLoadArgs>(OnnxLoadArgs::Config{std::nullopt, false}));
    groups.push_back(std::make_unique<OnnxSaveArgs>(OnnxSaveArgs::Config{"output", "-o", true}));
    return groups;
}

std::set<std::string> read_exclude_list(const std::string& path) {
    std::set<std::string> names;
    std::istringstream lines(read_file(path));
    for (std::string line; std::getline(lines, line);) {
        line.erase(line.find_last_not_of(" \t\r\n\f\v") + 1);
        if (!line.empty()) names.insert(line);
    }
    return names;
}

}  // namespace

std::string SurgeonPruneTool::description() const {
    return "[EXPERIMENTAL] Prune the weights of a model to follow a 2:4 structured sparsity pattern without regard for "
           "accuracy.\nFor every four weight values, two will be set to zero.\n\n**NOTE:** This tool is meant to help "
           "functionally test sparsity.\nIt will almost certainly cause significant accuracy degradation and so should "
           "NOT be used outside of functional testing.\n";
}

std::vector<std::unique_ptr<ArgGroup>> SurgeonPruneTool::subscriptions() {
    return weight_tool_groups();
}

int SurgeonPruneTool::run_impl(const ParsedArgs& /*args*/) {
    OnnxModel model = load_and_log(arg_group<OnnxLoadArgs>());
    prune_model_2_4(*model);
    save_and_log(arg_group<OnnxSaveArgs>(), *model);
    return 0;
}

std::string SurgeonWeightStripTool::description() const {
    return "Strip weights from the provided ONNX model\n";
}

std::vector<std::unique_ptr<ArgGroup>> SurgeonWeightStripTool::subscriptions() {
    return weight_tool_groups();
}

std::vector<OptionSpec> SurgeonWeightStripTool::tool_options() const {
    return {Option({"--exclude-list"}).help("Path to text file containing a list of initializers to skip")};
}

int SurgeonWeightStripTool::run_impl(const ParsedArgs& args) {
    const auto exclude_path = args.value("exclude_list");
    const std::set<std::string> exclude = exclude_path ? read_exclude_list(*exclude_path) : std::set<std::string>{};
    OnnxModel model = load_and_log(arg_group<OnnxLoadArgs>());
    strip_weights(*model, exclude);
    save_and_log(arg_group<OnnxSaveArgs>(), *model);
    return 0;
}

std::string SurgeonWeightReconstructTool::description() const {
    return "Reconstruct proxy weights in the Stripped ONNX model\n";
}

std::vector<std::unique_ptr<ArgGroup>> SurgeonWeightReconstructTool::subscriptions() {
    return weight_tool_groups();
}

int SurgeonWeightReconstructTool::run_impl(const ParsedArgs& /*args*/) {
    OnnxModel model = load_and_log(arg_group<OnnxLoadArgs>());
    reconstruct_weights(*model);
    save_and_log(arg_group<OnnxSaveArgs>(), *model);
    return 0;
}

}  // namespace polygraphy::tools
