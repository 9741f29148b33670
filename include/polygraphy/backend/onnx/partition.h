// Cutting a model into node subsets: the models that `inspect capability` saves and `check lint`
// runs node by node.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// Tensors that `node`'s subgraphs (If/Loop/Scan bodies, at any depth) read from enclosing scopes:
/// names used in a subgraph that the subgraph itself does not define. In first-use order.
std::vector<std::string> outer_scope_inputs(const onnx::NodeProto& node);

/// Every tensor a node reads: its non-empty inputs, then outer_scope_inputs(). In order, unique.
std::vector<std::string> node_reads(const onnx::NodeProto& node);

/// Declared types of the tensors of `graph` (value_info, inputs, outputs, initializers), by name.
std::map<std::string, onnx::TypeProto> declared_types(const onnx::GraphProto& graph);

/// Cuts standalone models out of `model` (which must outlive it). Construction indexes the graph
/// once (O(nodes)), so that cutting every node on its own stays linear overall.
class NodeSubsetExtractor {
public:
    /// Indexes `model`'s graph.
    explicit NodeSubsetExtractor(const onnx::ModelProto& model);

    /// A standalone model made of the top-level nodes `node_indices` (in the given order):
    /// - inputs: tensors those nodes read (node_reads) that none of them produces and that are not
    ///   initializers; typed from `types`, then declared_types(), untyped when unknown anywhere;
    /// - initializers: the ones they read, copied;
    /// - outputs: tensors they produce that are graph outputs or read by other nodes; when there are
    ///   none, the ones not read among them (so that the model has outputs);
    /// - ir_version, opset imports, local functions and producer are kept; the graph is named `name`.
    /// Throws InternalError for an index out of range.
    onnx::ModelProto extract(const std::vector<int>& node_indices, const std::string& name,
                             const std::map<std::string, onnx::TypeProto>& types = {}) const;

private:
    const onnx::ModelProto& model_;
    std::vector<std::vector<std::string>> reads_;              // node_reads() of every node
    std::map<std::string, std::vector<int>> readers_;          // tensor -> nodes reading it
    std::set<std::string> graph_outputs_;
    std::map<std::string, const onnx::TensorProto*> initializers_;
    std::map<std::string, onnx::TypeProto> declared_;
};

}  // namespace polygraphy
