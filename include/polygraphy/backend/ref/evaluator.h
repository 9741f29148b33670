// The built-in runtime seen from the ONNX graph passes (see polygraphy/backend/onnx/evaluator.h).
#pragma once

#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnx/evaluator.h"

namespace polygraphy {
namespace ref {

/// The built-in runtime as a GraphEvaluator: supported_ops() lists OpRegistry::builtin(),
/// prepare() builds a Session. It is default_graph_evaluator() unless a program sets another.
const GraphEvaluator& graph_evaluator();

}  // namespace ref

/// Capability checker of the built-in runtime (`inspect capability`, the default backend): the
/// registry has a kernel for the node's (domain, op, opset) and a session can be prepared for it
/// (which validates attributes and constant inputs). evaluator_node_checker(ref::graph_evaluator()).
NodeChecker ref_node_checker();

}  // namespace polygraphy
