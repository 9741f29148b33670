// Subgraph patterns for `polygraphy plugin list|match|replace`. Polygraphy's plugin folders hold a
// pattern.py that builds an ONNX-GraphSurgeon GraphPattern in Python; this project reads the same
// topology from a declarative pattern.json:
//
//   {"name": "toyPlugin", "op": "CustomToyPlugin",
//    "inputs": ["x0", "x1"], "outputs": ["d", "e"],
//    "nodes": [{"name": "Anode", "op": "A", "inputs": ["x0"], "outputs": ["a"]},
//              {"name": "Bnode", "op": "B", "inputs": ["x1"], "outputs": ["b"]},
//              {"name": "Cnode", "op": "C", "inputs": ["a", "b"], "outputs": ["c"],
//               "attributes": {"x": {"less": 2.0}}},
//              {"name": "Dnode", "op": "D", "inputs": ["c"], "outputs": ["d"]},
//              {"name": "Enode", "op": "E", "inputs": ["c"], "outputs": ["e"]}],
//    "attributes": {"ToyX": {"from": "Cnode.x"}, "mode": "fast"}}
//
// "inputs" are variables that match any tensor; every other tensor of the pattern is produced by
// one of its nodes. A node matches a graph node of the same op type and domain with as many inputs
// and outputs, whose attributes meet the node's conditions (a value: equal; {"less"|"less_equal"|
// "greater"|"greater_equal"|"equals": value}). The plugin node's attributes are constants or copies
// of a matched node's attribute ({"from": "<pattern node>.<attribute>"}).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// The attribute values a pattern and a plugin configuration hold: ONNX's INT, FLOAT, STRING, INTS,
/// FLOATS and STRINGS.
using PatternValue =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, std::vector<std::string>>;

/// A condition on one attribute of a pattern node.
struct AttributeCondition {
    /// How the attribute compares with `value`.
    enum class Kind { kEquals, kLess, kLessEqual, kGreater, kGreaterEqual };
    std::string attribute;      ///< attribute name
    Kind kind = Kind::kEquals;  ///< equal, or an ordering (numbers)
    PatternValue value;  ///< what the attribute is compared with (numbers only for the orderings)
};

/// One node of a pattern.
struct PatternNode {
    std::string name;                            ///< unique within the pattern ("node<i>" when not given)
    std::string op;                              ///< op type
    std::string domain;                          ///< "" (ai.onnx) unless given
    std::vector<std::string> inputs;             ///< pattern tensor names
    std::vector<std::string> outputs;            ///< pattern tensor names
    std::vector<AttributeCondition> conditions;  ///< all must hold
};

/// One attribute of the plugin node: a constant, or copied from the graph node matched to `from_node`.
struct PluginAttribute {
    std::string name;            ///< attribute name on the plugin node
    PatternValue value;          ///< the constant (when from_node is empty)
    std::string from_node;       ///< pattern node whose matched graph node gives the value
    std::string from_attribute;  ///< that node's attribute
};

/// A plugin's pattern (pattern.json).
struct GraphPattern {
    std::string name;                 ///< the plugin's name (the op type `plugin replace` writes)
    std::string op;                   ///< the plugin's op, recorded in the configuration as Polygraphy does
    std::vector<std::string> inputs;  ///< variables, in order
    std::vector<std::string> outputs;         ///< produced by the nodes, in order
    std::vector<PatternNode> nodes;           ///< one connected subgraph
    std::vector<PluginAttribute> attributes;  ///< the plugin node's attributes
};

/// Parses and checks a pattern.json text. FormatError "<source>: ..." for JSON errors, missing or
/// mistyped fields, a tensor produced twice or by nobody, an input that a node produces, an output
/// no node produces, a node that reads and writes nothing of the pattern, a pattern whose nodes do
/// not form one connected subgraph, duplicate node names, an unknown condition, and an attribute
/// copied from an unknown node.
GraphPattern graph_pattern_from_json(std::string_view text, const std::string& source);

/// One occurrence of a pattern in a graph.
struct PatternMatch {
    std::vector<std::string> inputs;   ///< the tensors bound to the pattern's inputs, in order, each once
    std::vector<std::string> outputs;  ///< the tensors bound to the pattern's outputs, in order, each once
    std::vector<std::size_t> nodes;    ///< indices of the matched graph nodes, in graph order
    std::vector<std::pair<std::string, PatternValue>> attributes;  ///< the plugin node's attributes
};

/// Every non-overlapping occurrence of `pattern` in the top-level graph of `model`, searched from the
/// graph nodes in order. Besides the nodes' op types, domains, arities and conditions, a tensor
/// produced inside the occurrence that is not a pattern output is read by no node outside it and is
/// no graph output, and no pattern input is produced inside it, so that the occurrence can be
/// replaced by one node. PolygraphyException when a plugin attribute copies an attribute that the
/// matched node lacks or whose type (tensor, graph) a configuration cannot hold.
std::vector<PatternMatch> find_pattern_matches(const onnx::ModelProto& model, const GraphPattern& pattern);

/// The value of an INT, FLOAT, STRING, INTS, FLOATS or STRINGS attribute; UnsupportedError for others.
PatternValue pattern_value_of(const onnx::AttributeProto& attribute);
/// An attribute named `name` holding `value`.
onnx::AttributeProto attribute_from_pattern_value(const std::string& name, const PatternValue& value);

}  // namespace polygraphy
