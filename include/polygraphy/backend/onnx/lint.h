// `check lint`: every independent problem of an ONNX model, in Polygraphy's JSON report format.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/backend/onnx/evaluator.h"
#include "polygraphy/common/tensor.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy {

enum class LintLevel { kException, kWarning, kInfo };
/// "exception", "warning", "info".
const char* lint_level_name(LintLevel level);

/// Sources of lint entries. Polygraphy's names where the check is Polygraphy's: "onnx_checker"
/// (libonnx's checker), "onnx_loader" (the model could not be loaded), "onnx_graphsurgeon" (graph
/// analysis: duplicate names, dangling tensors, opset imports, unknown and unused things). The test
/// inference runs on a GraphEvaluator (the built-in runtime by default), whose entries say
/// "ref_runtime" where Polygraphy's say "onnxruntime".
inline constexpr const char* kLintSourceChecker = "onnx_checker";
inline constexpr const char* kLintSourceLoader = "onnx_loader";
inline constexpr const char* kLintSourceGraph = "onnx_graphsurgeon";
inline constexpr const char* kLintSourceRuntime = "ref_runtime";

/// One finding of `check lint`.
struct LintEntry {
    LintLevel level = LintLevel::kException;  ///< severity
    std::string source;                       ///< what found it (e.g. kLintSourceRuntime)
    std::string message;                      ///< one-line description
    std::optional<std::string> node;  ///< the node concerned; none for model-wide findings
};

/// Polygraphy's lint report: entries in the order found, and which nodes passed or failed the test
/// inference (a node with an exception entry fails; nodes downstream of a failure are in neither).
class LintReport {
public:
    /// Records an entry and logs it as Polygraphy does: `LINT | [Name: <node>, Op: <op> | ]<message>`
    /// at [E] (exception), [W] or [I]. An exception on a node moves it to `failing`; any other entry
    /// on a node marks it passing unless it already fails.
    void add(LintLevel level, const std::string& source, const std::string& message,
             const std::optional<std::string>& node = std::nullopt, const std::string& op = {});
    /// Marks a node passing (unless it fails).
    void mark_passing(const std::string& node);

    /// Entries in the order found.
    const std::vector<LintEntry>& entries() const { return entries_; }
    /// Nodes that passed the test inference.
    const std::vector<std::string>& passing() const { return passing_; }
    /// Nodes with an exception entry.
    const std::vector<std::string>& failing() const { return failing_; }
    /// No exception entry.
    bool valid() const { return valid_; }

    /// `{"summary": {"passing": [...], "failing": [...]}, "lint_entries": [{"level", "source",
    /// "message", "nodes"?}, ...]}`, indented by 4 like Polygraphy's save_json.
    std::string to_json() const;
    /// Writes to_json() atomically, logging `Saving linting report to <path>`.
    void save(const std::string& path) const;

private:
    std::vector<LintEntry> entries_;
    std::vector<std::string> passing_, failing_;
    bool valid_ = true;
};

/// Options of the lint checks.
struct LintOptions {
    /// Inputs for the test inference, given the graph's input metadata (generated or loaded).
    /// Empty: no test inference. Exceptions it throws become a warning entry.
    std::function<TensorMap(const TensorMetadata& input_metadata)> make_feed;
    int num_threads = 0;  ///< for the test inference; 0: every core
    /// Runs the test inference and says which operators have kernels; nullptr: default_graph_evaluator().
    const GraphEvaluator* evaluator = nullptr;
};

/// Lints `model` and keeps going after each problem:
/// 1. unnamed nodes are called `polygraphy_unnamed_node_<index>` (uniquified) in the report;
/// 2. duplicate node names (exception, one entry per name);
/// 3. the structural node check (find_node_problems(), node_check.h): one exception per problem,
///    on its node (or the node whose subgraph holds it); such nodes are never run, and the test
///    inference goes node by node around them;
/// 4. libonnx's checker, node by node and on the whole model, when it knows the model's IR version
///    and opset (onnx 1.12: IR <= 8, opset <= 17); otherwise a warning entry says it was not run;
/// 5. graph analysis: tensors produced twice or shadowing an input/initializer, duplicate inputs
///    and initializers, node inputs and graph outputs nothing produces, nodes out of topological
///    order, and (when the checker did not run) missing opset imports and unknown operators;
/// 6. a test inference on the evaluator: the whole model first; when that fails, node by
///    node in graph order on the outputs of the nodes before, so that every independent failure is
///    reported with its node (nodes downstream of a failure are skipped). Operators the runtime
///    lacks are warnings (custom domains) or noted as unchecked; the node then counts as passing;
/// 7. inputs and nodes that do not affect the outputs, and unused initializers (warnings).
/// An empty graph gives one warning ("ONNX model has no nodes").
LintReport lint_onnx(const onnx::ModelProto& model, const LintOptions& options = {});

}  // namespace polygraphy
