// The structural check of every node against its operator's signature, run once when a model is
// loaded (onnx_from_path, onnx_from_bytes, onnx_structure_from_path) and before any pass that reads
// nodes by position: shape inference, folding, fp16 conversion, the built-in runtime's passes.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/exception.h"

namespace polygraphy {

/// One node that does not fit its operator's signature.
struct NodeProblem {
    std::string
        graph;  ///< "" for the main graph; "<node>/<attribute>" (nested with '/') for a subgraph, "function <name>"
    std::string node;     ///< the node's name, or "<op_type>_<index>" for an unnamed node
    std::string op_type;  ///< the node's operator
    std::string domain;   ///< the operator's domain as messages name it ("ai.onnx" for the default one)
    int64_t opset = 0;    ///< the opset the model imports for that domain
    std::string what;     ///< what is wrong, e.g. "it has 0 inputs, but the operator takes 1"
    /// The main graph's node that this is (or whose subgraph holds it), by index; -1 in a local function.
    int top_level_index = -1;
    std::string top_level_node;  ///< that node's name (as `node` names it); empty in a local function

    /// One line: "Malformed node 'pool' (GlobalAveragePool, ai.onnx opset 17): it has no input, ...".
    std::string message() const;
};

/// A model with nodes that do not fit their operators' signatures. what() is the first problem's
/// message (with a count of the others); problems() lists them all, in graph order.
class MalformedNodeError : public ModelError {
public:
    /// `problems` must not be empty.
    explicit MalformedNodeError(std::vector<NodeProblem> problems);
    /// Every problem found, in graph order (subgraphs after their node).
    const std::vector<NodeProblem>& problems() const { return problems_; }

private:
    std::vector<NodeProblem> problems_;
};

/// Every node of the model (main graph, subgraphs, local functions) whose structure does not fit its
/// operator's signature for the model's opset: its input and output counts (optional ones included),
/// an empty name where the input or output is required, a required attribute missing (graph
/// attributes such as Scan's `body` included), a graph attribute without a graph, or a local function
/// call with more inputs or outputs than the function declares. Signatures come from libonnx's
/// schemas (opsets up to 17) and, for the standard operators added or changed later and for operators
/// declared with declare_operator_signature(), from the project's own table. Operators of other
/// domains with no declared signature are not checked. Never throws for what it finds; reads nothing
/// that it has not checked, so it is safe on any parsed model.
std::vector<NodeProblem> find_node_problems(const onnx::ModelProto& model);

/// Throws MalformedNodeError when find_node_problems() finds anything.
void check_nodes(const onnx::ModelProto& model);

/// The signature of an operator that libonnx has no schema for (a contrib or custom operator).
struct OperatorSignature {
    int min_inputs = 0;                            ///< inputs that must be present
    int max_inputs = 0;                            ///< inputs that may be present (kUnbounded: variadic)
    int min_outputs = 1;                           ///< outputs that must be present
    int max_outputs = 1;                           ///< outputs that may be present (kUnbounded: variadic)
    std::vector<std::string> required_attributes;  ///< attributes a node must have
    /// Inputs (by position, below min_inputs) whose name may be empty: optional inputs in the middle.
    std::vector<int> optional_inputs;
    static constexpr int kUnbounded = 1 << 30;  ///< no upper bound on a count
};

/// Declares the signature of `op_type` in `domain` from opset `since_version` on, for the check above
/// (the built-in runtime declares its contrib operators; extension modules may declare theirs). A
/// later declaration of the same (domain, op_type, since_version) replaces the earlier one.
/// Thread-safe.
void declare_operator_signature(const std::string& domain, const std::string& op_type, int since_version,
                                OperatorSignature signature);

}  // namespace polygraphy
