// check lint: libonnx's checker, graph analysis and a test inference on a runtime (GraphEvaluator).
#include "polygraphy/backend/onnx/lint.h"
#include "polygraphy/backend/onnx/node_check.h"

#include "backend/onnx/domain.h"
#include "backend/onnx/external_data.h"
#include "backend/onnx/messages.h"

#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace {

/// What is wrong with a sparse tensor that libonnx 1.12's checker would read past its data (F22: its
/// ParseData copies int64 indices from raw bytes into a vector sized by whole elements, so a few
/// stray bytes are a copy into nothing, and it reads nnz indices whatever the tensor holds), or "".
std::string sparse_tensor_problem(const onnx::SparseTensorProto& sparse) {
    const onnx::TensorProto& values = sparse.values();
    const onnx::TensorProto& indices = sparse.indices();
    if (values.data_location() == onnx::TensorProto::EXTERNAL || indices.data_location() == onnx::TensorProto::EXTERNAL)
        return "its values or indices are in external data";
    if (values.dims_size() != 1 || values.dims(0) < 0) return "its values are not a vector";
    if (indices.data_type() != onnx::TensorProto::INT64) return "its indices are not int64";
    const int64_t nnz = values.dims(0);
    const bool flat = indices.dims_size() == 1 && indices.dims(0) == nnz;
    const bool coordinates =
        indices.dims_size() == 2 && indices.dims(0) == nnz && indices.dims(1) == sparse.dims_size();
    if (!flat && !coordinates) return "the shape of its indices does not fit its values and dims";
    const int64_t wanted = flat ? nnz : nnz * sparse.dims_size();
    if (indices.has_raw_data() ? indices.raw_data().size() != static_cast<std::size_t>(wanted) * sizeof(int64_t)
                               : indices.int64_data_size() != wanted)
        return "its indices hold another number of values than their shape";
    return "";
}

/// The first problem of a sparse tensor in `node`'s attributes, their subgraphs included, or "".
std::string sparse_attribute_problem(const onnx::NodeProto& node);

std::string sparse_graph_problem(const onnx::GraphProto& graph) {
    for (const auto& sparse : graph.sparse_initializer())
        if (std::string problem = sparse_tensor_problem(sparse); !problem.empty())
            return "sparse initializer '" + sparse.values().name() + "': " + problem;
    for (const auto& node : graph.node())
        if (std::string problem = sparse_attribute_problem(node); !problem.empty()) return problem;
    return "";
}

std::string sparse_attribute_problem(const onnx::NodeProto& node) {
    for (const auto& attr : node.attribute()) {
        std::string problem = attr.has_sparse_tensor() ? sparse_tensor_problem(attr.sparse_tensor()) : "";
        for (int i = 0; problem.empty() && i < attr.sparse_tensors_size(); ++i)
            problem = sparse_tensor_problem(attr.sparse_tensors(i));
        if (!problem.empty()) return "sparse tensor attribute '" + attr.name() + "': " + problem;
        if (attr.has_g())
            if (problem = sparse_graph_problem(attr.g()); !problem.empty()) return problem;
        for (const auto& graph : attr.graphs())
            if (problem = sparse_graph_problem(graph); !problem.empty()) return problem;
    }
    return "";
}

std::string quoted_list(const std::vector<int>& ids) {
    std::string out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
    return out + "]";
}

onnx::TypeProto type_of_tensor(const Tensor& tensor) {
    onnx::TypeProto type;
    type.mutable_tensor_type()->set_elem_type(dtype_to_onnx(tensor.dtype()));
    auto* shape = type.mutable_tensor_type()->mutable_shape();
    for (int64_t dim : tensor.shape()) shape->add_dim()->set_dim_value(dim);
    return type;
}

class Linter {
public:
    Linter(const onnx::ModelProto& model, const LintOptions& options)
        : model_(model),
          graph_(model.graph()),
          options_(options),
          runtime_(options.evaluator ? *options.evaluator : default_graph_evaluator()) {}

    LintReport run() {
        if (graph_.node_size() == 0) {
            report_.add(LintLevel::kWarning, kLintSourceLoader, "ONNX model has no nodes");
            check_node_structure();  // local functions may still hold malformed nodes
            return std::move(report_);
        }
        name_nodes();
        check_duplicate_node_names();
        check_node_structure();
        const bool checker_ran = run_onnx_checker();
        check_graph(!checker_ran);
        test_inference();
        report_unused();
        return std::move(report_);
    }

private:
    const onnx::NodeProto& node(int index) const { return graph_.node(index); }
    const std::string& name(int index) const { return names_[static_cast<std::size_t>(index)]; }

    void add(LintLevel level, const std::string& source, const std::string& message, int node_index) {
        report_.add(level, source, message, name(node_index), node(node_index).op_type());
    }

    void name_nodes() {
        std::set<std::string> taken;
        for (const auto& n : graph_.node()) taken.insert(n.name());
        int uid = 0;
        for (int i = 0; i < graph_.node_size(); ++i) {
            std::string name = node(i).name();
            if (name.empty()) {
                name = "polygraphy_unnamed_node_" + std::to_string(i);
                while (taken.count(name)) name = "polygraphy_unnamed_node_" + std::to_string(i) + "_" + std::to_string(uid++);
                taken.insert(name);
                logger().verbose("Node with topological id: " + std::to_string(i) + " has empty name. Renaming to: " +
                                 name);
            }
            names_.push_back(name);
        }
    }

    // Nodes that do not fit their operators: findings of their own, and never run (the runtime and
    // libonnx read nodes by position).
    void check_node_structure() {
        const std::vector<NodeProblem> problems = find_node_problems(model_);
        malformed_model_ = !problems.empty();
        for (const NodeProblem& problem : problems) {
            if (problem.top_level_index < 0) {
                report_.add(LintLevel::kException, kLintSourceChecker, problem.message());
                continue;
            }
            malformed_nodes_.insert(problem.top_level_index);
            add(LintLevel::kException, kLintSourceChecker, problem.message(), problem.top_level_index);
        }
    }

    void check_duplicate_node_names() {
        std::vector<std::pair<std::string, std::vector<int>>> ids;
        std::map<std::string, std::size_t> position;
        for (int i = 0; i < graph_.node_size(); ++i) {
            auto [it, inserted] = position.emplace(name(i), ids.size());
            if (inserted) ids.push_back({name(i), {}});
            ids[it->second].second.push_back(i);
        }
        for (const auto& [node_name, list] : ids)
            if (list.size() > 1)
                report_.add(LintLevel::kException, kLintSourceGraph,
                            "Duplicate node name: '" + node_name + "' for nodes with topological IDs: " +
                                quoted_list(list) + " found.",
                            node_name);
    }

    // libonnx's checker, when it knows the model's IR version and opset; false when not run.
    bool run_onnx_checker() {
        const int max_ir = static_cast<int>(onnx::Version::IR_VERSION);
        const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
        const int max_opset = ranges.count("") ? ranges.at("").second : 0;
        const int64_t default_opset = imported_opset(model_, "").value_or(-1);
        const std::string checker = std::string("this build's checker (onnx ") + onnx::LAST_RELEASE_VERSION + ")";
        // A newer IR version whose additions (new data types) the model does not use can be checked
        // as the newest IR version the checker knows.
        const bool newer_ir = model_.ir_version() > max_ir;
        if (default_opset > max_opset || (newer_ir && uses_post_ir8_types())) {
            report_.add(LintLevel::kWarning, kLintSourceChecker,
                        "The ONNX checker was not run: " + checker + " knows IR versions up to " +
                            std::to_string(max_ir) + " and opsets up to " + std::to_string(max_opset) +
                            ", but the model has IR version " + std::to_string(model_.ir_version()) + " and opset " +
                            std::to_string(default_opset) +
                            (default_opset > max_opset ? "" : " and uses data types of a later IR version") +
                            ". Spec checks of nodes and attributes were skipped; the graph checks and the test "
                            "inference still ran");
            return false;
        }
        const int ir_version = newer_ir ? max_ir : static_cast<int>(model_.ir_version());
        if (newer_ir)
            report_.add(LintLevel::kInfo, kLintSourceChecker,
                        "The ONNX checker ran as for IR version " + std::to_string(max_ir) + ": " + checker +
                            " knows IR versions up to " + std::to_string(max_ir) + ", and the model (IR version " +
                            std::to_string(model_.ir_version()) + ") uses none of the later data types");

        onnx::checker::CheckerContext context;
        context.set_ir_version(ir_version);
        std::unordered_map<std::string, int> imports;
        for (const auto& import : model_.opset_import())
            imports[std::string(canonical_domain(import.domain()))] = static_cast<int>(import.version());
        context.set_opset_imports(imports);
        onnx::checker::LexicalScopeContext scope;
        for (const auto& input : graph_.input()) scope.add(input.name());
        for (const auto& init : graph_.initializer()) scope.add(init.name());
        for (const auto& n : graph_.node())
            for (const auto& output : n.output()) scope.add(output);
        for (int i = 0; i < graph_.node_size(); ++i) {
            // libonnx's checker would read past a malformed sparse tensor: report it here instead.
            if (const std::string problem = sparse_attribute_problem(node(i)); !problem.empty()) {
                add(LintLevel::kException, kLintSourceChecker, "Malformed " + problem, i);
                checker_failed_nodes_.insert(i);
                continue;
            }
            try {
                onnx::checker::check_node(node(i), context, scope);
            } catch (const std::exception& error) {
                const std::string message = one_line(error.what());
                // As Polygraphy: a custom domain nobody imported is a custom op, so a warning.
                if (!is_onnx_domain(node(i).domain()) && message.find("No opset import for domain") != std::string::npos) {
                    add(LintLevel::kWarning, kLintSourceChecker, message, i);
                    continue;
                }
                add(LintLevel::kException, kLintSourceChecker, message, i);
                checker_failed_nodes_.insert(i);
            }
        }

        // As Polygraphy, outputs without a shape are given an empty one (exporters often omit it).
        bool outputs_lack_shape = false;
        for (const auto& output : graph_.output())
            if (output.type().has_tensor_type() && !output.type().tensor_type().has_shape()) outputs_lack_shape = true;
        std::optional<onnx::ModelProto> adjusted;
        const bool external = checked_external_bytes(model_) > 0;
        if (newer_ir || outputs_lack_shape || external) {
            adjusted = external ? checker_copy(model_) : model_;
            adjusted->set_ir_version(ir_version);
            for (auto& output : *adjusted->mutable_graph()->mutable_output())
                if (output.type().has_tensor_type() && !output.type().tensor_type().has_shape())
                    output.mutable_type()->mutable_tensor_type()->mutable_shape();
        }
        std::string sparse_problem = sparse_graph_problem(graph_);
        for (int f = 0; sparse_problem.empty() && f < model_.functions_size(); ++f)
            for (const auto& n : model_.functions(f).node())
                if (sparse_problem.empty()) sparse_problem = sparse_attribute_problem(n);
        if (!sparse_problem.empty()) {
            model_checker_error_ = "The ONNX checker was not run on the whole model: malformed " + sparse_problem;
            return true;
        }
        try {
            onnx::checker::check_model(adjusted ? *adjusted : model_);
        } catch (const std::exception& error) {
            const std::string message = error.what();
            // Node errors were reported node by node above.
            if (message.find("Bad node spec for node") == std::string::npos) model_checker_error_ = one_line(message);
        }
        return true;
    }

    // Data types IR version 9 (float8) and 10 (int4, uint4) added.
    bool uses_post_ir8_types() const {
        auto late = [](int32_t type) { return type > onnx::TensorProto::BFLOAT16 && type <= 64; };
        bool found = false;
        std::function<void(const onnx::GraphProto&)> scan = [&](const onnx::GraphProto& graph) {
            for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()})
                for (const auto& value : *list)
                    if (value.type().has_tensor_type() && late(value.type().tensor_type().elem_type())) found = true;
            for (const auto& init : graph.initializer())
                if (late(init.data_type())) found = true;
            for (const auto& n : graph.node())
                for (const auto& attr : n.attribute()) {
                    if (attr.has_t() && late(attr.t().data_type())) found = true;
                    if (attr.has_g()) scan(attr.g());
                    for (const auto& sub : attr.graphs()) scan(sub);
                }
        };
        scan(graph_);
        return found;
    }

    void check_graph(bool check_ops) {
        std::map<std::string, int> producer;  // tensor -> node index (first)
        std::set<std::string> inputs, initializers;
        bool structural_error = false;
        for (const auto& init : graph_.initializer())
            if (!initializers.insert(init.name()).second) {
                report_.add(LintLevel::kException, kLintSourceGraph,
                            "Initializer '" + init.name() + "' is defined more than once");
                structural_error = true;
            }
        for (const auto& input : graph_.input())
            if (!inputs.insert(input.name()).second) {
                report_.add(LintLevel::kException, kLintSourceGraph,
                            "Graph input '" + input.name() + "' is listed more than once");
                structural_error = true;
            }
        for (int i = 0; i < graph_.node_size(); ++i) {
            for (const auto& output : node(i).output()) {
                if (output.empty()) continue;
                auto [it, inserted] = producer.emplace(output, i);
                if (!inserted) {
                    add(LintLevel::kException, kLintSourceGraph,
                        "Tensor '" + output + "' is also produced by node '" + name(it->second) +
                            "' (tensor names must be unique)",
                        i);
                    structural_error = true;
                } else if (inputs.count(output) || initializers.count(output)) {
                    add(LintLevel::kException, kLintSourceGraph,
                        "Output '" + output + "' has the name of a graph " +
                            (inputs.count(output) ? "input" : "initializer") + " (tensor names must be unique)",
                        i);
                    structural_error = true;
                }
            }
        }
        for (int i = 0; i < graph_.node_size(); ++i) {
            for (const auto& input : node_reads(node(i))) {
                if (inputs.count(input) || initializers.count(input)) continue;
                const auto found = producer.find(input);
                if (found == producer.end()) {
                    add(LintLevel::kException, kLintSourceGraph,
                        "Input '" + input + "' is not produced by any node and is not a graph input or initializer", i);
                    structural_error = true;
                } else if (found->second >= i) {
                    add(LintLevel::kWarning, kLintSourceGraph,
                        "Input '" + input + "' is produced by node '" + name(found->second) +
                            "', which comes later: the nodes are not topologically sorted",
                        i);
                    structural_error = true;
                }
            }
        }
        for (const auto& output : graph_.output())
            if (!producer.count(output.name()) && !inputs.count(output.name()) && !initializers.count(output.name())) {
                report_.add(LintLevel::kException, kLintSourceGraph,
                            "Graph output '" + output.name() +
                                "' is not produced by any node and is not a graph input or initializer");
                structural_error = true;
            }

        if (model_checker_error_) {
            // The checker stops at its first model-wide error; skip it when it restates a finding above.
            const std::string& message = *model_checker_error_;
            const bool restated = structural_error && (message.find("SSA") != std::string::npos ||
                                                       message.find("topologically sorted") != std::string::npos ||
                                                       message.find("is not produced") != std::string::npos);
            if (!restated) report_.add(LintLevel::kException, kLintSourceChecker, message);
        }

        if (!check_ops) return;
        if (model_.opset_import_size() == 0)
            report_.add(LintLevel::kException, kLintSourceGraph, "The model imports no opset");
        for (int i = 0; i < graph_.node_size(); ++i) {
            const auto& n = node(i);
            const std::optional<int64_t> imported = imported_opset(model_, n.domain());
            const std::string domain = display_domain(n.domain());
            if (!imported) {
                // As Polygraphy: a custom domain nobody imported is a custom op, so a warning.
                add(is_onnx_domain(n.domain()) ? LintLevel::kException : LintLevel::kWarning, kLintSourceGraph,
                    "No opset import for domain '" + domain + "'", i);
                continue;
            }
            if (!is_onnx_domain(n.domain()) || is_local_function(n)) continue;
            if (known_op(n, *imported)) continue;
            const auto* latest = onnx::OpSchemaRegistry::Schema(n.op_type(), std::string(canonical_domain(n.domain())));
            if (latest || runtime_.supports_some_opset(n.domain(), n.op_type()))
                add(LintLevel::kException, kLintSourceGraph,
                    n.op_type() + " is not defined in opset " + std::to_string(*imported) + " of domain '" + domain +
                        "'",
                    i);
            else
                add(LintLevel::kException, kLintSourceGraph,
                    "Unknown operator " + n.op_type() + " in domain '" + domain + "'", i);
        }
    }

    bool is_local_function(const onnx::NodeProto& n) const {
        for (const auto& function : model_.functions())
            if (function.name() == n.op_type() && function.domain() == n.domain()) return true;
        return false;
    }

    // Whether the runtime or ONNX's schemas define the operator at `version`.
    bool known_op(const onnx::NodeProto& n, int64_t version) const {
        if (runtime_.supports(n.domain(), n.op_type(), version)) return true;
        return onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(version),
                                              std::string(canonical_domain(n.domain()))) != nullptr;
    }

    void test_inference() {
        if (!options_.make_feed) return;
        TensorMap feed;
        try {
            feed = options_.make_feed(get_onnx_input_metadata(graph_));
        } catch (const std::exception& error) {
            report_.add(LintLevel::kWarning, kLintSourceRuntime,
                        std::string("The test inference was skipped: no inputs could be made for the model: ") +
                            one_line(error.what()));
            return;
        }
        if (malformed_model_) {
            logger().verbose("Some nodes do not fit their operators, linting node by node");
            lint_node_by_node(feed);
            return;
        }
        try {
            runtime_.prepare(model_, {}, options_.num_threads)->run(feed);
            for (int i = 0; i < graph_.node_size(); ++i)
                if (!checker_failed_nodes_.count(i)) report_.mark_passing(name(i));
            logger().verbose("Inference on " + runtime_.name() + " passed for the whole model");
            return;
        } catch (const std::exception& error) {
            logger().verbose(std::string("Inference of the whole model failed, linting node by node: ") + error.what());
        }
        lint_node_by_node(feed);
    }

    void lint_node_by_node(const TensorMap& feed) {
        std::set<std::string> initializers;
        for (const auto& init : graph_.initializer()) initializers.insert(init.name());
        // Readers left per tensor, so that values are dropped after their last reader.
        std::map<std::string, int> readers_left;
        std::vector<std::vector<std::string>> reads;
        for (int i = 0; i < graph_.node_size(); ++i) {
            reads.push_back(node_reads(node(i)));
            for (const auto& tensor : reads.back()) ++readers_left[tensor];
        }
        std::map<std::string, Tensor> cache;
        for (const auto& [tensor_name, tensor] : feed) cache[tensor_name] = tensor;

        const NodeSubsetExtractor extractor(model_);
        for (int i = 0; i < graph_.node_size(); ++i) {
            const auto& node_inputs = reads[static_cast<std::size_t>(i)];
            bool ready = true;
            for (const auto& tensor : node_inputs)
                if (!initializers.count(tensor) && !cache.count(tensor)) ready = false;
            if (malformed_nodes_.count(i))
                logger().verbose("Skipping node '" + name(i) + "': it does not fit its operator");
            else if (ready)
                lint_node(i, extractor, cache, node_inputs, initializers);
            else
                logger().verbose("Skipping node '" + name(i) + "': an input comes from a node that failed");
            for (const auto& tensor : node_inputs)
                if (--readers_left[tensor] == 0) cache.erase(tensor);
        }
    }

    void lint_node(int i, const NodeSubsetExtractor& extractor, std::map<std::string, Tensor>& cache,
                   const std::vector<std::string>& node_inputs, const std::set<std::string>& initializers) {
        const auto& n = node(i);
        logger().extra_verbose("Linting node: " + name(i) + ": " + n.op_type());
        const std::optional<int64_t> imported = imported_opset(model_, n.domain());
        const std::string domain = display_domain(n.domain());
        if (!is_local_function(n) &&
            !runtime_.supports(n.domain(), n.op_type(), imported.value_or(kOpsetOfUnimportedDomain))) {
            if (!is_onnx_domain(n.domain()))
                add(LintLevel::kWarning, kLintSourceRuntime,
                    "Custom operator " + n.op_type() + " (domain '" + domain +
                        "') is not a registered function/op of " + runtime_.name() + ": not checked",
                    i);
            else if (imported && known_op(n, *imported))
                add(LintLevel::kInfo, kLintSourceRuntime,
                    capitalized(runtime_.name()) + " has no kernel for " + n.op_type() + " (opset " +
                        std::to_string(*imported) + "): not checked",
                    i);
            // Unknown ONNX operators were reported by the checker or the graph checks.
            return;
        }
        std::map<std::string, onnx::TypeProto> types;
        TensorMap feed;
        for (const auto& tensor : node_inputs) {
            if (initializers.count(tensor)) continue;
            const Tensor& value = cache.at(tensor);
            types[tensor] = type_of_tensor(value);
            feed.set(tensor, value);
        }
        try {
            const onnx::ModelProto single = extractor.extract({i}, name(i), types);
            const TensorMap outputs = runtime_.prepare(single, {}, options_.num_threads)->run(feed);
            for (const auto& [tensor_name, tensor] : outputs) cache[tensor_name] = tensor;
            if (!checker_failed_nodes_.count(i)) report_.mark_passing(name(i));
        } catch (const std::exception& error) {
            add(LintLevel::kException, kLintSourceRuntime, failure_reason(error.what()), i);
        }
    }

    // Polygraphy's cleanup analysis: what does not contribute to the graph outputs.
    void report_unused() {
        std::map<std::string, int> producer;
        for (int i = 0; i < graph_.node_size(); ++i)
            for (const auto& output : node(i).output())
                if (!output.empty()) producer.emplace(output, i);
        std::set<std::string> needed;
        std::vector<bool> used_node(static_cast<std::size_t>(graph_.node_size()), false);
        std::vector<std::string> stack;
        for (const auto& output : graph_.output()) stack.push_back(output.name());
        while (!stack.empty()) {
            const std::string tensor = stack.back();
            stack.pop_back();
            if (!needed.insert(tensor).second) continue;
            const auto found = producer.find(tensor);
            if (found == producer.end() || used_node[static_cast<std::size_t>(found->second)]) continue;
            used_node[static_cast<std::size_t>(found->second)] = true;
            for (const auto& input : node_reads(node(found->second))) stack.push_back(input);
        }
        std::set<std::string> initializers;
        for (const auto& init : graph_.initializer()) initializers.insert(init.name());
        std::vector<std::string> unused_inputs;
        for (const auto& input : graph_.input())
            if (!needed.count(input.name()) && !initializers.count(input.name())) unused_inputs.push_back(input.name());
        std::sort(unused_inputs.begin(), unused_inputs.end());
        for (const auto& input : unused_inputs)
            report_.add(LintLevel::kWarning, kLintSourceGraph,
                        "Input: '" + input + "' does not affect outputs, can be removed.");
        std::vector<int> unused_nodes;
        for (int i = 0; i < graph_.node_size(); ++i)
            if (!used_node[static_cast<std::size_t>(i)]) unused_nodes.push_back(i);
        std::stable_sort(unused_nodes.begin(), unused_nodes.end(), [&](int a, int b) { return name(a) < name(b); });
        for (int i : unused_nodes) add(LintLevel::kWarning, kLintSourceGraph, "Does not affect outputs, can be removed.", i);
        // Beyond Polygraphy: initializers no node reads at all.
        std::set<std::string> read;
        for (const auto& n : graph_.node())
            for (const auto& tensor : node_reads(n)) read.insert(tensor);
        for (const auto& output : graph_.output()) read.insert(output.name());
        for (const auto& init : graph_.initializer())
            if (!read.count(init.name()))
                report_.add(LintLevel::kWarning, kLintSourceGraph,
                            "Initializer: '" + init.name() + "' is not used by any node, can be removed.");
    }

    const onnx::ModelProto& model_;
    const onnx::GraphProto& graph_;
    const LintOptions& options_;
    const GraphEvaluator& runtime_;  // runs the test inference
    LintReport report_;
    std::vector<std::string> names_;
    std::set<int> checker_failed_nodes_;
    std::set<int> malformed_nodes_;  // main-graph nodes that find_node_problems() named
    bool malformed_model_ = false;   // any node problem, a local function's included
    std::optional<std::string> model_checker_error_;
};

}  // namespace

const char* lint_level_name(LintLevel level) {
    switch (level) {
        case LintLevel::kException: return "exception";
        case LintLevel::kWarning: return "warning";
        case LintLevel::kInfo: return "info";
    }
    return "exception";
}

void LintReport::add(LintLevel level, const std::string& source, const std::string& message,
                     const std::optional<std::string>& node, const std::string& op) {
    const std::string scope = node && !op.empty() ? "Name: " + *node + ", Op: " + op + " | " : "";
    const Severity severity = level == LintLevel::kException ? Severity::kError
                              : level == LintLevel::kWarning ? Severity::kWarning
                                                             : Severity::kInfo;
    logger().log(severity, "LINT | " + scope + message);
    entries_.push_back({level, source, message, node});
    if (node) {
        if (level == LintLevel::kException) {
            if (std::find(failing_.begin(), failing_.end(), *node) == failing_.end()) failing_.push_back(*node);
            passing_.erase(std::remove(passing_.begin(), passing_.end(), *node), passing_.end());
        } else {
            mark_passing(*node);
        }
    }
    if (level == LintLevel::kException) valid_ = false;
}

void LintReport::mark_passing(const std::string& node) {
    if (std::find(failing_.begin(), failing_.end(), node) != failing_.end()) return;
    if (std::find(passing_.begin(), passing_.end(), node) == passing_.end()) passing_.push_back(node);
}

std::string LintReport::to_json() const {
    std::string out;
    json::Writer writer(&out);
    writer.begin_object().key("summary").begin_object();
    writer.key("passing").begin_array();
    for (const auto& node : passing_) writer.value(node);
    writer.end_array().key("failing").begin_array();
    for (const auto& node : failing_) writer.value(node);
    writer.end_array().end_object();
    writer.key("lint_entries").begin_array();
    for (const auto& entry : entries_) {
        writer.begin_object();
        writer.key("level").value(lint_level_name(entry.level));
        writer.key("source").value(entry.source);
        writer.key("message").value(entry.message);
        if (entry.node) writer.key("nodes").begin_array().value(*entry.node).end_array();
        writer.end_object();
    }
    writer.end_array().end_object();
    writer.finish();
    return out;
}

void LintReport::save(const std::string& path) const {
    logger().info("Saving linting report to " + path);
    write_file_atomically(path, to_json());
}

LintReport lint_onnx(const onnx::ModelProto& model, const LintOptions& options) {
    return Linter(model, options).run();
}

}  // namespace polygraphy
