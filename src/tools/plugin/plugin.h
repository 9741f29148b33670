// `polygraphy plugin list|match|replace`: finds the subgraphs that plugins' patterns describe and
// replaces them by one plugin node each. Polygraphy's plugin folders hold Python patterns over
// ONNX-GraphSurgeon; here each plugin folder holds a declarative pattern.json
// (polygraphy/backend/onnx/pattern.h), and a pattern.py is refused in one line.
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Dispatches to the "Plugin Subtools".
std::unique_ptr<Tool> make_plugin_tool();

/// `plugin list|match MODEL --plugin-dir DIR [--include P...|--exclude P...]`: each plugin folder of
/// DIR (sorted) with a pattern.json is searched for in the model (find_pattern_matches()), logging
/// `checking <plugin> in model` and then the count per plugin; `match` writes the configuration
/// (plugin_config.h) to `-o` or config.yaml beside the model.
class PluginSearchTool : public Tool {
public:
    PluginSearchTool(std::string name, bool write_config) : Tool(std::move(name)), write_config_(write_config) {}
    std::string description() const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;

private:
    bool write_config_;
};

class PluginListTool : public PluginSearchTool {
public:
    PluginListTool() : PluginSearchTool("list", false) {}
};

class PluginMatchTool : public PluginSearchTool {
public:
    PluginMatchTool() : PluginSearchTool("match", true) {}
};

/// `plugin replace MODEL [--config config.yaml] -o OUT`: every instance of the configuration becomes
/// one node whose op type is the plugin's name, with the instance's inputs, outputs and attributes,
/// replacing what computed those outputs from those inputs (insert_node(), as `surgeon insert`).
class PluginReplaceTool : public Tool {
public:
    PluginReplaceTool() : Tool("replace") {}
    std::string description() const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
