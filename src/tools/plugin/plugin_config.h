// The configuration `plugin match` writes and `plugin replace` reads: Polygraphy's config.yaml, one
// YAML document per plugin ({name, op, instances: [{inputs, outputs, attributes}]}), laid out as
// PyYAML's dump_all(default_flow_style=False, sort_keys=False) writes it, so that Polygraphy and
// this tool read each other's files and a user can delete the instances not to replace.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polygraphy/backend/onnx/pattern.h"

namespace polygraphy::tools {

/// One subgraph to replace by the plugin's node.
struct PluginInstance {
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
    std::vector<std::pair<std::string, PatternValue>> attributes;
};

/// One plugin and its instances.
struct PluginConfigEntry {
    std::string name;  ///< the plugin's name: the op type of the node that replaces each instance
    std::string op;    ///< the plugin's op as its pattern names it (kept for Polygraphy's format)
    std::vector<PluginInstance> instances;
};

/// The YAML text of `entries`.
std::string plugin_config_to_yaml(const std::vector<PluginConfigEntry>& entries);

/// Reads a config.yaml: block mappings and sequences, flow lists and maps of scalars, plain and
/// quoted scalars, comments, documents separated by `---`. FormatError "<source>:<line>: <problem>"
/// for YAML outside that subset and for documents that are not plugin entries.
std::vector<PluginConfigEntry> plugin_config_from_yaml(std::string_view text, const std::string& source);

}  // namespace polygraphy::tools
