// Pairing the tensors of two different graphs of one network (`polygraphy debug diff`): an fp16 or
// quantized version, a graph ONNX Runtime optimized, a re-export with other names or another order.
//
//     GraphMatching matching = match_graphs(fp32.graph(), fp16.graph());
//     for (const TensorPair& pair : matching.pairs) ...  // pair.a, pair.b, pair.how, pair.b_nodes
//
// Stages, in order; a tensor is paired at most once, by the first stage that pairs it:
//   1. user: the pairs of a match file (--match-file);
//   2. name: equal tensor names;
//   3. convention: the names ONNX Runtime's quantizer gives (`<t>_QuantizeLinear_Input`,
//      `<t>_QuantizeLinear_Output`, `<t>_DequantizeLinear_Output`) and fp16 converters' Cast names;
//   4. provenance: nodes with equal names, equal PyTorch scopes (`pkg.torch.onnx.name_scopes`) or
//      the one node of an operator type in a scope path of the node names ("/layer1/conv1/Conv");
//   5. structure: colour refinement over both graphs at once (operator, output index, shape and the
//      colours of each tensor's producer inputs and consumers), seeded by the pairs found so far, so
//      that tensors with one counterpart of their colour are paired whatever the names and the
//      node order;
//   6. the graph outputs left over, by position, when their shapes agree.
//
// Casts, Identity and QuantizeLinear -> DequantizeLinear chains are transparent: such a node's
// output is an alias of its input, and a pair names the chain's head (the tensor a real operator
// produced). Each pair then has a group on each side: the nodes that compute it from paired tensors
// and weights (the Conv and the Relu that B's FusedConv replaced; the 11 nodes of a decomposed
// LayerNormalization), and the transparent nodes in front of it (the QDQ of a quantized layer).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// How a pair was found (the JSON report's and the match file's `how`).
enum class MatchKind { kName, kConvention, kProvenance, kStructure, kUser };

/// "name", "convention", "provenance", "structure" or "user".
std::string_view match_kind_name(MatchKind kind);

/// A pair the user gives: tensor names of A and of B.
struct UserMatch {
    std::string a;  ///< a tensor of graph A
    std::string b;  ///< a tensor of graph B
};

/// What to pair besides what the graphs tell.
struct GraphMatchOptions {
    /// Graph inputs of A and B with different names (`--input-map a:b`); the others pair by name.
    std::vector<std::pair<std::string, std::string>> input_map = {};
    /// Pairs that override every other stage (`--match-file`).
    std::vector<UserMatch> user = {};
};

/// Two tensors that hold the same value of the network.
struct TensorPair {
    std::string a;  ///< tensor of graph A (a chain head)
    std::string b;  ///< tensor of graph B (a chain head)
    MatchKind how = MatchKind::kName;  ///< the stage that found the pair
    double confidence = 1.0;  ///< 1 for name and user pairs; less for the guesses of later stages
    std::string detail;       ///< why, for the report: "QDQ suffix", "node '/conv1/Conv'", ...
    /// Indices into graph.node() of the group that computes the tensor on each side, in graph
    /// order (empty for graph inputs). B's includes the nodes that compute its weights (a Constant,
    /// the DequantizeLinear of an int8 weight), since the group runs alone; A's leaves out nodes that
    /// only compute weights.
    /// @{
    std::vector<int> a_nodes = {}, b_nodes = {};
    /// @}
    /// The paired B tensors (chain heads or graph inputs) that B's group reads: what a run of the
    /// group alone is fed with A's values of.
    std::vector<std::string> b_inputs = {};
    /// B's tensor, or a transparent node's output of it (the Cast an fp16 conversion ends with), is a
    /// graph output of B.
    bool b_graph_output = false;
};

/// The result of match_graphs().
struct GraphMatching {
    std::vector<TensorPair> inputs;  ///< graph inputs, in B's order
    std::vector<TensorPair> pairs;   ///< node outputs, in B's graph order
    /// Tensors a node computes (chain heads, not weights) that have no counterpart, in each graph's order.
    /// @{
    std::vector<std::string> unmatched_a, unmatched_b;
    /// @}
};

/// Pairs the tensors of `a` and `b` (both in topological order, as ONNX requires). UsageError when
/// a graph input of B has no counterpart in A (by name or input_map, with a did-you-mean hint), when
/// an input_map or user pair names a tensor that does not exist, or when two user pairs name one
/// tensor.
GraphMatching match_graphs(const onnx::GraphProto& a, const onnx::GraphProto& b, const GraphMatchOptions& options = {});

/// A node's name for reports: its name, else "<op_type>_<index>".
std::string node_display_name(const onnx::GraphProto& graph, int index);

/// Reads a match file: JSON `{"pairs": [{"a": "tensorA", "b": "tensorB"}, ...]}` (extra members
/// such as the `how` and the node groups that save_match_file() writes are ignored), or the same list
/// as a bare array. FormatError for text that is not such a file.
std::vector<UserMatch> read_match_file(const std::string& path);

/// Writes `matching` as a match file (atomically): each pair's `a`, `b`, `how`, `confidence`,
/// `detail` and both groups' node names; inputs first. read_match_file() reads it back.
void save_match_file(const GraphMatching& matching, const onnx::GraphProto& a, const onnx::GraphProto& b,
                     const std::string& path);

}  // namespace polygraphy
