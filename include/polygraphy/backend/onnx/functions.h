// ONNX local functions (the FunctionProtos of ModelProto.functions): expanding the nodes that call
// them into the nodes of the function bodies, so that every pass and runtime sees plain operators.
//
// Names. A call node is named by its name, or "<op_type>_<index in its graph>" when it has none.
// Inside the call of node N, each value the body defines (its nodes' outputs, the names in its
// subgraphs) is called "N/<name in the body>", and each body node "N/<node name>" (or
// "N/<op_type>_<index in the body>"); the function's formal inputs and outputs are the call's own
// tensors. Calls nest: a value two calls deep is "outer/inner/<name>". These are the names that
// `--onnx-outputs mark all` compares layer by layer.
//
// A call binds to the function with the node's domain, op_type and overload (IR 10). Attributes
// referring to the caller's (ref_attr_name) take the call's attribute, else the function's default
// (FunctionProto.attribute_proto, IR 9), else are left out. Errors: ModelError for a function that
// calls itself (directly or through others), and for a node of a domain that only local functions
// define whose function does not exist.
#pragma once

#include <vector>

#include <onnx/onnx_pb.h>

namespace polygraphy {

/// One node of a graph after the calls to local functions were expanded.
struct ExpandedNode {
    onnx::NodeProto node;  ///< the node, with the names described above
    /// The innermost function whose body the node comes from (its opset_import applies to the node),
    /// or nullptr for a node of the graph itself. Points into the model given to expand_function_calls().
    const onnx::FunctionProto* function = nullptr;
};

/// Whether a node of `model`'s graph (or of its subgraphs) calls one of its local functions.
bool calls_local_functions(const onnx::ModelProto& model);

/// The nodes of `graph` (a graph of `model`) with every call to a local function of `model` expanded,
/// recursively, in an order that keeps the graph sorted. Subgraphs of the nodes are expanded too.
/// Throws as the file comment says.
std::vector<ExpandedNode> expand_function_calls(const onnx::ModelProto& model, const onnx::GraphProto& graph);

/// Expands every call to a local function of `model` in place (see expand_function_calls()), removes
/// the functions and adds the opset imports the bodies need to the model's. UnsupportedError when a
/// function imports another version of a domain than the model (or another function) does: one
/// model cannot import both. Also UnsupportedError when a function imports a domain the model does
/// not import but the model's own nodes use (they run at opset 1). On any error the model is unchanged.
void inline_local_functions(onnx::ModelProto& model);

}  // namespace polygraphy
