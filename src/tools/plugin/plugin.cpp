#include "tools/plugin/plugin.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/pattern.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/model.h"
#include "tools/args/util.h"
#include "tools/plugin/plugin_config.h"

namespace polygraphy::tools {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPatternFile = "pattern.json";
constexpr const char* kPythonPatternFile = "pattern.py";

std::vector<std::unique_ptr<ArgGroup>> model_groups() {
    std::vector<std::unique_ptr<ArgGroup>> groups;
    groups.push_back(std::make_unique<ModelArgs>(ModelArgs::Config{true, "inputs"}));
    groups.push_back(std::make_unique<OnnxInferShapesArgs>());
    groups.push_back(std::make_unique<OnnxLoadArgs>(OnnxLoadArgs::Config{std::nullopt, false}));
    return groups;
}

// config.yaml beside the model, as Polygraphy's default.
std::string default_config_path(const std::string& model_path) {
    return (fs::absolute(fs::path(model_path)).parent_path() / "config.yaml").lexically_normal().string();
}

// The plugin folders of `plugin_dir` that hold a pattern (sorted by name), after --include/--exclude.
std::vector<std::string> plugin_folders(const std::string& plugin_dir, const std::vector<std::string>& include,
                                        const std::vector<std::string>& exclude) {
    std::error_code error;
    if (!fs::is_directory(plugin_dir, error))
        throw UsageError("--plugin-dir " + python_repr(plugin_dir) + " is not a folder");
    std::vector<std::string> plugins;
    for (const auto& entry : fs::directory_iterator(plugin_dir, error)) {
        if (!entry.is_directory(error)) continue;
        if (fs::exists(entry.path() / kPatternFile) || fs::exists(entry.path() / kPythonPatternFile))
            plugins.push_back(entry.path().filename().string());
    }
    if (error)
        throw PolygraphyException("Could not list --plugin-dir " + python_repr(plugin_dir) + ": " + error.message());
    std::sort(plugins.begin(), plugins.end());
    for (const std::string& name : include)
        if (std::find(plugins.begin(), plugins.end(), name) == plugins.end())
            logger().warning("--include names " + python_repr(name) + ", which is no plugin folder of " + plugin_dir +
                             " with a " + kPatternFile);
    std::vector<std::string> chosen;
    for (const std::string& name : plugins) {
        if (!include.empty() && std::find(include.begin(), include.end(), name) == include.end()) continue;
        if (std::find(exclude.begin(), exclude.end(), name) != exclude.end()) continue;
        chosen.push_back(name);
    }
    return chosen;
}

// The plugin's pattern.json; a Python pattern is refused in one line.
GraphPattern load_pattern(const fs::path& folder) {
    const fs::path json = folder / kPatternFile;
    if (!fs::exists(json)) {
        const fs::path python = folder / kPythonPatternFile;
        const std::string text = read_file(python.string());
        const bool graphsurgeon = text.find("onnx_graphsurgeon") != std::string::npos;
        throw UnsupportedError(python.string() + " is " +
                               (graphsurgeon ? "an ONNX-GraphSurgeon pattern" : "a Python pattern") +
                               ", which this build cannot run: describe the subgraph in " + kPatternFile +
                               " beside it (README: \"Plugin patterns\")");
    }
    return graph_pattern_from_json(read_file(json.string()), json.string());
}

}  // namespace

std::unique_ptr<Tool> make_plugin_tool() {
    return std::make_unique<DispatchingTool>(
        "plugin",
        "Plugin related operations on an onnx model. Plugin patterns are pattern.json files (a declarative\n"
        "subgraph), where Polygraphy runs ONNX-GraphSurgeon Python patterns.\n",
        "Plugin Subtools",
        std::vector<DispatchingTool::SubtoolFactory>{make_subtool<PluginMatchTool>, make_subtool<PluginListTool>,
                                                     make_subtool<PluginReplaceTool>});
}

std::string PluginSearchTool::description() const {
    return write_config_ ? "Find potential subgraphs in an onnx model to be replaced by plugins, and save them\n"
                           "to a configuration file (config.yaml) to edit and give to `plugin replace`.\n"
                         : "Find potential subgraphs in an onnx model to be replaced by plugins, without writing\n"
                           "a configuration file (a dry run of `plugin match`).\n";
}

std::vector<std::unique_ptr<ArgGroup>> PluginSearchTool::subscriptions() {
    return model_groups();
}

std::vector<OptionSpec> PluginSearchTool::tool_options() const {
    std::vector<OptionSpec> options = {
        Option({"--plugin-dir"})
            .required(true)
            .help("Plugin directory: one folder per plugin, each with a pattern.json"),
        Option({"--include"})
            .kind(OptionKind::kValues)
            .exclusive_group("plugin_selection")
            .help("Names of plugins to include. Format: `--include <plugin_name0> <plugin_name1> ...`"),
        Option({"--exclude"})
            .kind(OptionKind::kValues)
            .exclusive_group("plugin_selection")
            .help("Names of plugins to exclude. Format: `--exclude <plugin_name0> <plugin_name1> ...`"),
    };
    if (write_config_)
        options.push_back(Option({"-o", "--output"})
                              .help("Where to save the configuration of the matches. Default: config.yaml beside "
                                    "the model"));
    return options;
}

int PluginSearchTool::run_impl(const ParsedArgs& args) {
    const std::string plugin_dir = *args.value("plugin_dir");
    const std::vector<std::string> plugins = plugin_folders(plugin_dir, args.values("include"), args.values("exclude"));
    std::string output;
    if (write_config_) {
        const OnnxLoadArgs& load = arg_group<OnnxLoadArgs>();
        output = args.value("output").value_or(default_config_path(load.model_job().path));
        args_util::check_destination(output, "-o/--output");
    }
    // Every pattern is read before the model: a bad one is refused at once.
    std::vector<GraphPattern> patterns;
    for (const std::string& plugin : plugins) patterns.push_back(load_pattern(fs::path(plugin_dir) / plugin));

    const OnnxModel model = arg_group<OnnxLoadArgs>().onnx_loader()();
    std::vector<PluginConfigEntry> entries;
    std::string frequencies;
    for (std::size_t p = 0; p < plugins.size(); ++p) {
        logger().info("checking " + plugins[p] + " in model");
        const std::vector<PatternMatch> matches = find_pattern_matches(*model, patterns[p]);
        frequencies +=
            (frequencies.empty() ? "" : ", ") + python_repr(plugins[p]) + ": " + std::to_string(matches.size());
        if (matches.empty()) continue;
        PluginConfigEntry entry{patterns[p].name, patterns[p].op, {}};
        for (const PatternMatch& match : matches) {
            std::string nodes;
            for (std::size_t index : match.nodes)
                nodes += (nodes.empty() ? "" : ", ") + python_repr(model->graph().node(static_cast<int>(index)).name());
            logger().verbose("    " + plugins[p] + ": nodes [" + nodes + "]");
            entry.instances.push_back({match.inputs, match.outputs, match.attributes});
        }
        entries.push_back(std::move(entry));
    }
    logger().info("the following plugins matched:");
    logger().info("{" + frequencies + "}");
    if (!write_config_) return 0;
    write_file_atomically(output, plugin_config_to_yaml(entries));
    logger().info("Matching subgraphs saved to " + output);
    return 0;
}

std::string PluginReplaceTool::description() const {
    return "Replace subgraphs in an onnx model with plugins: each instance of the configuration (config.yaml,\n"
           "from `plugin match`) becomes one node whose op is the plugin's name.\n";
}

std::vector<std::unique_ptr<ArgGroup>> PluginReplaceTool::subscriptions() {
    std::vector<std::unique_ptr<ArgGroup>> groups = model_groups();
    groups.push_back(std::make_unique<OnnxSaveArgs>(OnnxSaveArgs::Config{"output", "-o", true}));
    return groups;
}

std::vector<OptionSpec> PluginReplaceTool::tool_options() const {
    return {
        Option({"--plugin-dir"}).help("Plugin directory (accepted as Polygraphy does; the configuration is enough)"),
        Option({"--config"}).help("The configuration from `plugin match`. Default: config.yaml beside the model"),
    };
}

int PluginReplaceTool::run_impl(const ParsedArgs& args) {
    const OnnxLoadArgs& load = arg_group<OnnxLoadArgs>();
    const std::string config = args.value("config").value_or(default_config_path(load.model_job().path));
    std::error_code error;
    if (!fs::is_regular_file(config, error))
        throw PolygraphyException(
            "No plugin configuration at " + config +
            (args.value("config") ? "" : " (write one with `polygraphy plugin match`, or give --config)"));
    const std::vector<PluginConfigEntry> entries = plugin_config_from_yaml(read_file(config), config);

    OnnxModel model = load.onnx_loader()();
    std::set<std::string> names;
    for (const auto& node : model->graph().node()) names.insert(node.name());
    std::size_t replaced = 0;
    for (const PluginConfigEntry& entry : entries) {
        for (const PluginInstance& instance : entry.instances) {
            onnx::NodeProto node;
            node.set_op_type(entry.name);
            std::string name = entry.name;
            for (int k = 0; names.count(name); ++k) name = entry.name + "_" + std::to_string(k);
            names.insert(name);
            node.set_name(name);
            for (const std::string& input : instance.inputs) node.add_input(input);
            for (const std::string& output : instance.outputs) node.add_output(output);
            for (const auto& [attribute, value] : instance.attributes)
                *node.add_attribute() = attribute_from_pattern_value(attribute, value);
            insert_node(*model, std::move(node));
            ++replaced;
        }
    }
    logger().info("Replaced " + std::to_string(replaced) + " subgraph(s) with plugin nodes");
    arg_group<OnnxSaveArgs>().save(*model);
    return 0;
}

}  // namespace polygraphy::tools
