// `inspect capability`: which nodes of a model a backend can run, and the model cut into maximal
// runs of supported and unsupported nodes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/backend/onnx/evaluator.h"

namespace polygraphy {

/// A backend's answer for one node.
struct NodeVerdict {
    bool supported = true;  ///< whether the backend can run the node
    std::string reason;  ///< why not (one line), empty when supported
};

/// Decides whether a backend can run `node`, given the standalone one-node model made of it
/// (NodeSubsetExtractor::extract). Never throws for an unsupported node: that is a verdict.
using NodeChecker = std::function<NodeVerdict(const onnx::ModelProto& single_node_model, const onnx::NodeProto& node)>;

/// A runtime seen through its GraphEvaluator (which must outlive the checker): it has a kernel for
/// the node's (domain, op, opset) and can prepare the one-node model (which validates attributes and
/// constant inputs). The built-in runtime's checker is ref_node_checker() (in the ref backend's
/// evaluator.h); ONNX-Runtime's, onnxrt_node_checker() (in the onnxrt backend's capability.h).
NodeChecker evaluator_node_checker(const GraphEvaluator& evaluator);

/// Which nodes of a model a backend supports (`polygraphy inspect capability`).
struct CapabilityReport {
    std::string backend;               ///< display name, e.g. "ONNX-Runtime"
    std::vector<NodeVerdict> nodes;    ///< one per top-level node, in graph order
    std::vector<std::string> op_types;  ///< op type of every node
    /// A run of consecutive nodes with the same verdict.
    struct Partition {
        bool supported = true;  ///< verdict of every node of the run
        int begin = 0;  ///< first node index
        int end = 0;    ///< one past the last node index
    };
    /// Maximal runs of consecutive nodes with the same verdict (graph order, which ONNX requires to
    /// be topological), covering every node once.
    std::vector<Partition> partitions;

    /// Whether every node is supported.
    bool fully_supported() const;
    /// Polygraphy's `===== Summary =====` table: one row per (op type, reason) of unsupported nodes
    /// with their count and node ranges `[[begin, end], ...]` (end exclusive).
    std::string summary() const;
};

/// Best-effort type and shape inference with libonnx, in place (value_info is added), so that the
/// nodes cut out of the model have typed inputs (ONNX-Runtime needs them) and the saved subgraphs
/// carry what is known. What cannot be inferred stays unknown (logged at verbose); throws only
/// MalformedNodeError (node_check.h), for a model whose nodes do not fit their operators.
void infer_value_info(onnx::ModelProto& model);

/// Asks `checker` about every top-level node of `model` and partitions the graph.
CapabilityReport check_capability(const onnx::ModelProto& model, const NodeChecker& checker,
                                  const std::string& backend);

/// Saves every partition as `<dir>/{supported,unsupported}_subgraph-nodes-<first>-<last>.onnx`
/// (standalone models: NodeSubsetExtractor) and the summary as `<dir>/results.txt`, logging each
/// path. The folder is created when missing; PolygraphyException naming the path when it cannot be
/// written (files are written atomically: nothing half-written).
void save_capability_results(const onnx::ModelProto& model, const CapabilityReport& report, const std::string& dir);

}  // namespace polygraphy
