// Expanding calls to ONNX local functions (see include/polygraphy/backend/onnx/functions.h).
#include "polygraphy/backend/onnx/functions.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "backend/onnx/domain.h"
#include "polygraphy/backend/onnx/proto_fields.h"
#include "polygraphy/common/exception.h"

namespace polygraphy {
namespace {

// Fields of IR 9 and 10 that the ONNX headers of this build (IR 8) do not know: protobuf keeps them
// as unknown fields, which are read here.
constexpr int kFunctionAttributeProtoField = 11;  // FunctionProto.attribute_proto (IR 9)
constexpr int kFunctionOverloadField = 13;        // FunctionProto.overload (IR 10)

std::string overload_of(const google::protobuf::UnknownFieldSet& fields, int number) {
    const std::vector<std::string> values = unknown_strings(fields, number);
    return values.empty() ? std::string() : values.back();
}

using FunctionKey = std::tuple<std::string, std::string, std::string>;  // domain, name, overload

FunctionKey key_of(const onnx::FunctionProto& function) {
    return {std::string(canonical_domain(function.domain())), function.name(),
            overload_of(function.unknown_fields(), kFunctionOverloadField)};
}

FunctionKey key_of(const onnx::NodeProto& node) {
    return {std::string(canonical_domain(node.domain())), node.op_type(),
            overload_of(node.unknown_fields(), kNodeOverloadField)};
}

std::string function_label(const FunctionKey& key) {
    const auto& [domain, name, overload] = key;
    std::string label = display_domain(domain) + "." + name;
    if (!overload.empty()) label += " (overload '" + overload + "')";
    return label;
}

std::string display_name(const onnx::NodeProto& node, std::size_t index) {
    return node.name().empty() ? fmt::format("{}_{}", node.op_type(), index) : node.name();
}

// The attributes a call gives its function's body: the call's own, then the function's defaults.
using AttributeScope = std::unordered_map<std::string, const onnx::AttributeProto*>;

class Expander {
public:
    explicit Expander(const onnx::ModelProto& model) {
        for (const auto& function : model.functions()) {
            functions_.emplace(key_of(function), &function);
            function_domains_.insert(std::string(canonical_domain(function.domain())));
        }
    }

    // The function `node` calls; nullptr for an operator. ModelError for a missing function.
    const onnx::FunctionProto* callee(const onnx::NodeProto& node, const std::string& name) const {
        const FunctionKey key = key_of(node);
        auto found = functions_.find(key);
        if (found != functions_.end()) return found->second;
        const bool names_function = !std::get<2>(key).empty() ||
                                    (!is_onnx_domain(node.domain()) && function_domains_.contains(std::get<0>(key)));
        if (names_function)
            throw ModelError(fmt::format("Node '{}' calls local function '{}', which the model does not define", name,
                                         function_label(key)));
        return nullptr;
    }

    // Appends the nodes of `graph` to `out`, expanding calls; the graph's own names are kept.
    void expand_graph(const onnx::GraphProto& graph, std::vector<ExpandedNode>& out) {
        for (int i = 0; i < graph.node_size(); ++i) {
            onnx::NodeProto node = graph.node(i);
            expand_subgraphs(node);
            const std::string name = display_name(node, static_cast<std::size_t>(i));
            if (const onnx::FunctionProto* function = callee(node, name))
                expand_call(node, name, *function, out);
            else
                out.push_back({std::move(node), nullptr});
        }
    }

    const std::set<const onnx::FunctionProto*>& used() const { return used_; }

private:
    // Expands calls inside the subgraphs of a node of a graph (their names are kept).
    void expand_subgraphs(onnx::NodeProto& node) {
        for (auto& attribute : *node.mutable_attribute()) {
            if (attribute.has_g()) replace_nodes(*attribute.mutable_g());
            for (auto& graph : *attribute.mutable_graphs()) replace_nodes(graph);
        }
    }

    void replace_nodes(onnx::GraphProto& graph) {
        std::vector<ExpandedNode> expanded;
        expand_graph(graph, expanded);
        graph.clear_node();
        for (auto& node : expanded) *graph.add_node() = std::move(node.node);
    }

    // Expands `call` (already in the caller's names, named `name`), a call to `function`.
    void expand_call(const onnx::NodeProto& call, const std::string& name, const onnx::FunctionProto& function,
                     std::vector<ExpandedNode>& out) {
        for (const onnx::FunctionProto* active : stack_) {
            if (active != &function) continue;
            std::string cycle;
            for (const onnx::FunctionProto* f : stack_) cycle += function_label(key_of(*f)) + " -> ";
            throw ModelError(fmt::format("Local function '{}' calls itself ({}{})", function_label(key_of(function)),
                                         cycle, function_label(key_of(function))));
        }
        used_.insert(&function);
        stack_.push_back(&function);

        const std::string prefix = name + "/";
        std::unordered_map<std::string, std::string> actual;  // formal parameter -> the call's tensor
        for (int i = 0; i < function.input_size(); ++i)
            actual[function.input(i)] = i < call.input_size() ? call.input(i) : std::string();
        for (int i = 0; i < function.output_size(); ++i) {
            const bool given = i < call.output_size() && !call.output(i).empty();
            actual[function.output(i)] = given ? call.output(i) : prefix + function.output(i);
        }
        auto rename = [&](const std::string& local) -> std::string {
            if (local.empty()) return local;
            auto found = actual.find(local);
            return found != actual.end() ? found->second : prefix + local;
        };

        std::vector<onnx::AttributeProto> defaults;
        for (const std::string& bytes : unknown_strings(function.unknown_fields(), kFunctionAttributeProtoField)) {
            onnx::AttributeProto attribute;
            if (!attribute.ParseFromString(bytes))
                throw ModelError(fmt::format("Local function '{}' has an unreadable default attribute",
                                             function_label(key_of(function))));
            defaults.push_back(std::move(attribute));
        }
        AttributeScope scope;
        for (const auto& attribute : defaults) scope[attribute.name()] = &attribute;
        for (const auto& attribute : call.attribute()) scope[attribute.name()] = &attribute;

        for (int j = 0; j < function.node_size(); ++j) {
            onnx::NodeProto node = function.node(j);
            node.set_name(prefix + display_name(node, static_cast<std::size_t>(j)));
            for (auto& input : *node.mutable_input()) input = rename(input);
            for (auto& output : *node.mutable_output()) output = rename(output);
            bind_attributes(node, scope, rename);
            if (const onnx::FunctionProto* nested = callee(node, node.name()))
                expand_call(node, node.name(), *nested, out);
            else
                out.push_back({std::move(node), &function});
        }
        stack_.pop_back();
    }

    // Resolves references to the caller's attributes and renames the values of subgraphs, in `node`
    // and in its subgraphs; calls inside those subgraphs are expanded.
    void bind_attributes(onnx::NodeProto& node, const AttributeScope& scope,
                         const std::function<std::string(const std::string&)>& rename) {
        auto* attributes = node.mutable_attribute();
        for (int k = attributes->size() - 1; k >= 0; --k) {
            onnx::AttributeProto& attribute = attributes->at(k);
            if (attribute.ref_attr_name().empty()) continue;
            auto found = scope.find(attribute.ref_attr_name());
            if (found == scope.end()) {
                attributes->DeleteSubrange(k, 1);  // not given and no default: as if absent
                continue;
            }
            const std::string own_name = attribute.name();
            attribute = *found->second;
            attribute.set_name(own_name);
        }
        for (auto& attribute : *attributes) {
            if (attribute.has_g()) bind_graph(*attribute.mutable_g(), scope, rename);
            for (auto& graph : *attribute.mutable_graphs()) bind_graph(graph, scope, rename);
        }
    }

    void bind_graph(onnx::GraphProto& graph, const AttributeScope& scope,
                    const std::function<std::string(const std::string&)>& rename) {
        for (auto& input : *graph.mutable_input()) input.set_name(rename(input.name()));
        for (auto& output : *graph.mutable_output()) output.set_name(rename(output.name()));
        for (auto& info : *graph.mutable_value_info()) info.set_name(rename(info.name()));
        for (auto& initializer : *graph.mutable_initializer()) initializer.set_name(rename(initializer.name()));
        for (int i = 0; i < graph.node_size(); ++i) {
            onnx::NodeProto& node = *graph.mutable_node(i);
            node.set_name(rename(display_name(node, static_cast<std::size_t>(i))));
            for (auto& input : *node.mutable_input()) input = rename(input);
            for (auto& output : *node.mutable_output()) output = rename(output);
            bind_attributes(node, scope, rename);
        }
        replace_nodes(graph);
    }

    std::map<FunctionKey, const onnx::FunctionProto*> functions_;
    std::set<std::string> function_domains_;
    std::vector<const onnx::FunctionProto*> stack_;  // functions being expanded, outermost first
    std::set<const onnx::FunctionProto*> used_;
};

bool graph_calls(const Expander& expander, const onnx::GraphProto& graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
        const onnx::NodeProto& node = graph.node(i);
        if (expander.callee(node, display_name(node, static_cast<std::size_t>(i)))) return true;
        for (const auto& attribute : node.attribute()) {
            if (attribute.has_g() && graph_calls(expander, attribute.g())) return true;
            for (const auto& subgraph : attribute.graphs())
                if (graph_calls(expander, subgraph)) return true;
        }
    }
    return false;
}

// Whether a node of `graph` (or of its subgraphs) that is not a function call is in `domain`.
bool graph_uses_domain(const Expander& expander, const onnx::GraphProto& graph, const std::string& domain) {
    for (int i = 0; i < graph.node_size(); ++i) {
        const onnx::NodeProto& node = graph.node(i);
        if (canonical_domain(node.domain()) == domain &&
            !expander.callee(node, display_name(node, static_cast<std::size_t>(i))))
            return true;
        for (const auto& attribute : node.attribute()) {
            if (attribute.has_g() && graph_uses_domain(expander, attribute.g(), domain)) return true;
            for (const auto& subgraph : attribute.graphs())
                if (graph_uses_domain(expander, subgraph, domain)) return true;
        }
    }
    return false;
}

}  // namespace

bool calls_local_functions(const onnx::ModelProto& model) {
    if (model.functions_size() == 0) return false;
    return graph_calls(Expander(model), model.graph());
}

std::vector<ExpandedNode> expand_function_calls(const onnx::ModelProto& model, const onnx::GraphProto& graph) {
    Expander expander(model);
    std::vector<ExpandedNode> nodes;
    expander.expand_graph(graph, nodes);
    return nodes;
}

void inline_local_functions(onnx::ModelProto& model) {
    Expander expander(model);
    std::vector<ExpandedNode> nodes;
    expander.expand_graph(model.graph(), nodes);

    std::vector<onnx::OperatorSetIdProto> added;
    std::map<std::string, std::pair<int64_t, std::string>> imports;  // domain -> version, who imports it
    for (const auto& import : model.opset_import())
        imports[std::string(canonical_domain(import.domain()))] = {import.version(), "the model"};
    for (const onnx::FunctionProto* function : expander.used()) {
        const std::string who = "local function '" + function_label(key_of(*function)) + "'";
        for (const auto& import : function->opset_import()) {
            const std::string domain(canonical_domain(import.domain()));
            auto [found, added_domain] = imports.try_emplace(domain, import.version(), who);
            if (added_domain) {
                // The model's own nodes of that domain run at kOpsetOfUnimportedDomain; importing
                // the function's version would change what they compute.
                if (graph_uses_domain(expander, model.graph(), domain))
                    throw UnsupportedError(fmt::format(
                        "Cannot inline {}: it imports opset {} of domain '{}', which the model does not import "
                        "although its graph has nodes of that domain (run at opset {})",
                        who, import.version(), display_domain(domain), kOpsetOfUnimportedDomain));
                added.push_back(import);
            } else if (found->second.first != import.version()) {
                throw UnsupportedError(
                    fmt::format("Cannot inline {}: it imports opset {} of domain '{}', but {} imports opset {}", who,
                                import.version(), display_domain(domain), found->second.second, found->second.first));
            }
        }
    }
    // Nothing changes before every check passed.
    for (auto& import : added) *model.add_opset_import() = std::move(import);
    model.mutable_graph()->clear_node();
    for (auto& node : nodes) *model.mutable_graph()->add_node() = std::move(node.node);
    model.clear_functions();
}

}  // namespace polygraphy
