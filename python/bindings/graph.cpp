// The graph API in Python (polygraphy.backend.onnx): a model's nodes as editable views, and the
// edits of `surgeon` (polygraphy/backend/onnx/graph.h) as methods of ModelProto. What Polygraphy's
// `template onnx-gs` scripts do with ONNX-GraphSurgeon, a script does here with these.
#include <pybind11/stl.h>

#include "bindings.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/pattern.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy::python {
namespace {

namespace py = pybind11;
using namespace pybind11::literals;
using ModelClass = py::class_<onnx::ModelProto, std::shared_ptr<onnx::ModelProto>>;

std::vector<std::string> names_of(const google::protobuf::RepeatedPtrField<std::string>& field) {
    return std::vector<std::string>(field.begin(), field.end());
}

void set_names(google::protobuf::RepeatedPtrField<std::string>* field, const std::vector<std::string>& names) {
    field->Clear();
    for (const std::string& name : names) *field->Add() = name;
}

// int, float, str, bool or a list of one of them.
PatternValue attribute_value(const std::string& name, const py::handle& value) {
    if (py::isinstance<py::bool_>(value) || py::isinstance<py::int_>(value)) return value.cast<int64_t>();
    if (py::isinstance<py::float_>(value)) return value.cast<double>();
    if (py::isinstance<py::str>(value)) return value.cast<std::string>();
    if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
        const py::sequence items = value.cast<py::sequence>();
        bool strings = false, floats = false, ints = false;
        for (const py::handle item : items) {
            if (py::isinstance<py::str>(item))
                strings = true;
            else if (py::isinstance<py::float_>(item))
                floats = true;
            else if (py::isinstance<py::int_>(item))
                ints = true;
            else
                throw UsageError("Attribute '" + name + "': a list may hold ints, floats or strings, not " +
                                 std::string(py::str(item.get_type().attr("__name__"))));
        }
        if (strings && (floats || ints)) throw UsageError("Attribute '" + name + "': a list mixes strings and numbers");
        if (strings) return items.cast<std::vector<std::string>>();
        if (floats) return items.cast<std::vector<double>>();
        return items.cast<std::vector<int64_t>>();
    }
    throw UsageError("Attribute '" + name + "': expected an int, float, str or a list of them, got " +
                     std::string(py::str(value.get_type().attr("__name__"))));
}

py::object python_value(const PatternValue& value) {
    return std::visit([](const auto& held) -> py::object { return py::cast(held); }, value);
}

void set_attribute(onnx::NodeProto& node, const std::string& name, const py::handle& value) {
    onnx::AttributeProto attribute = attribute_from_pattern_value(name, attribute_value(name, value));
    for (auto& existing : *node.mutable_attribute())
        if (existing.name() == name) {
            existing = std::move(attribute);
            return;
        }
    *node.add_attribute() = std::move(attribute);
}

int node_index(const onnx::ModelProto& model, const std::string& name) {
    const auto& nodes = model.graph().node();
    for (int i = 0; i < nodes.size(); ++i)
        if (nodes.Get(i).name() == name) return i;
    throw PolygraphyException("Node: " + name + " does not exist in the model.");
}

onnx::NodeProto make_node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name, const py::dict& attrs,
                          const std::string& domain) {
    onnx::NodeProto node;
    node.set_op_type(op);
    node.set_name(name);
    node.set_domain(domain);
    for (const std::string& input : inputs) node.add_input(input);
    for (const std::string& output : outputs) node.add_output(output);
    for (const auto& [key, value] : attrs) set_attribute(node, py::str(key), value);
    return node;
}

// A node of a model, found again on each use, so that a view of a removed node raises instead of
// reading freed memory.
class NodeRef {
public:
    NodeRef(OnnxModel model, const onnx::NodeProto* node) : model_(std::move(model)), node_(node) {}
    onnx::NodeProto& get() const {
        for (auto& node : *model_->mutable_graph()->mutable_node())
            if (&node == node_) return node;
        throw PolygraphyException("This node is no longer in its model (it was removed); take the model's nodes again");
    }

private:
    OnnxModel model_;
    const onnx::NodeProto* node_;
};

}  // namespace

void bind_graph(py::module_& module) {
    py::class_<NodeRef>(module, "Node",
                        "A node of a ModelProto's graph: a view that keeps its model alive; once the node is "
                        "removed from the model, using the view raises PolygraphyException.")
        .def_property(
            "name",
            [](const NodeRef& ref) {
                const onnx::NodeProto& node = ref.get();
                return node.name();
            },
            [](const NodeRef& ref, const std::string& name) {
                onnx::NodeProto& node = ref.get();
                node.set_name(name);
            })
        .def_property(
            "op",
            [](const NodeRef& ref) {
                const onnx::NodeProto& node = ref.get();
                return node.op_type();
            },
            [](const NodeRef& ref, const std::string& op) {
                onnx::NodeProto& node = ref.get();
                node.set_op_type(op);
            })
        .def_property(
            "domain",
            [](const NodeRef& ref) {
                const onnx::NodeProto& node = ref.get();
                return node.domain();
            },
            [](const NodeRef& ref, const std::string& domain) {
                onnx::NodeProto& node = ref.get();
                node.set_domain(domain);
            })
        .def_property(
            "inputs",
            [](const NodeRef& ref) {
                const onnx::NodeProto& node = ref.get();
                return names_of(node.input());
            },
            [](const NodeRef& ref, const std::vector<std::string>& names) {
                onnx::NodeProto& node = ref.get();
                set_names(node.mutable_input(), names);
            },
            "Input tensor names (a copy; assign a list to change them).")
        .def_property(
            "outputs",
            [](const NodeRef& ref) {
                const onnx::NodeProto& node = ref.get();
                return names_of(node.output());
            },
            [](const NodeRef& ref, const std::vector<std::string>& names) {
                onnx::NodeProto& node = ref.get();
                set_names(node.mutable_output(), names);
            },
            "Output tensor names (a copy; assign a list to change them).")
        .def_property_readonly(
            "attrs",
            [](const NodeRef& ref) {
                const onnx::NodeProto& node = ref.get();
                py::dict attrs;
                for (const auto& attribute : node.attribute()) {
                    try {
                        attrs[py::str(attribute.name())] = python_value(pattern_value_of(attribute));
                    } catch (const UnsupportedError&) {  // tensors and graphs are not shown
                    }
                }
                return attrs;
            },
            "INT, FLOAT, STRING attributes and their lists, by name (a copy; change them with set_attr).")
        .def(
            "set_attr",
            [](const NodeRef& ref, const std::string& name, const py::handle& value) {
                set_attribute(ref.get(), name, value);
            },
            "name"_a, "value"_a, "Sets an attribute: an int, float, str, bool or a list of one of them.")
        .def(
            "remove_attr",
            [](const NodeRef& ref, const std::string& name) {
                onnx::NodeProto& node = ref.get();
                auto& attributes = *node.mutable_attribute();
                for (int i = 0; i < attributes.size(); ++i)
                    if (attributes.Get(i).name() == name) {
                        attributes.DeleteSubrange(i, 1);
                        return;
                    }
                throw PolygraphyException("Node '" + node.name() + "' has no attribute '" + name + "'");
            },
            "name"_a)
        .def("__repr__", [](const NodeRef& ref) {
            const onnx::NodeProto& node = ref.get();
            return "Node(name=" + python_repr(node.name()) + ", op=" + python_repr(node.op_type()) +
                   ", inputs=" + python_list_repr(names_of(node.input())) +
                   ", outputs=" + python_list_repr(names_of(node.output())) + ")";
        });

    auto model = py::reinterpret_borrow<ModelClass>(module.attr("ModelProto"));
    model
        .def_property_readonly(
            "nodes",
            [](const OnnxModel& proto) {
                std::vector<NodeRef> nodes;
                for (auto& node : *proto->mutable_graph()->mutable_node()) nodes.emplace_back(proto, &node);
                return nodes;
            },
            "The graph's nodes, in order (views).")
        .def_property_readonly(
            "input_names",
            [](const onnx::ModelProto& proto) {
                std::vector<std::string> names;
                for (const auto& input : proto.graph().input()) names.push_back(input.name());
                return names;
            },
            "Names of the graph inputs, in order.")
        .def(
            "node",
            [](const OnnxModel& proto, const std::string& name) {
                return NodeRef(proto, proto->mutable_graph()->mutable_node(node_index(*proto, name)));
            },
            "name"_a, "The node named `name`.")
        .def(
            "add_node",
            [](const OnnxModel& proto, const std::string& op, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs, const std::string& name, const py::dict& attrs,
               const std::string& domain) {
                onnx::NodeProto node = make_node(op, inputs, outputs, name, attrs, domain);
                onnx::NodeProto* added = proto->mutable_graph()->add_node();
                *added = std::move(node);
                return NodeRef(proto, added);
            },
            "op"_a, "inputs"_a, "outputs"_a, "name"_a = "", "attrs"_a = py::dict(), "domain"_a = "",
            "Appends a node (toposort() puts it in order) and returns it.")
        .def(
            "remove_node",
            [](onnx::ModelProto& proto, const std::string& name) {
                proto.mutable_graph()->mutable_node()->DeleteSubrange(node_index(proto, name), 1);
            },
            "name"_a, "Removes the node named `name` (its outputs are no longer produced).")
        .def(
            "insert_node",
            [](onnx::ModelProto& proto, const std::string& op, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs, const std::string& name, const py::dict& attrs,
               const std::string& domain) { insert_node(proto, make_node(op, inputs, outputs, name, attrs, domain)); },
            "op"_a, "inputs"_a, "outputs"_a, "name"_a = "", "attrs"_a = py::dict(), "domain"_a = "",
            "Replaces what computes `outputs` from `inputs` by one node (`surgeon insert`), then cleans up and sorts.")
        .def(
            "set_outputs",
            [](const OnnxModel& proto, const std::vector<std::string>& names) { modify_outputs(proto, names, {}); },
            "names"_a, "Makes `names` the graph outputs (ModifyOutputs).")
        .def(
            "cleanup",
            [](onnx::ModelProto& proto, bool remove_unused_graph_inputs) {
                const CleanupStats stats = cleanup(proto, CleanupOptions{remove_unused_graph_inputs});
                return stats.nodes_removed;
            },
            "remove_unused_graph_inputs"_a = false,
            "Removes nodes no graph output depends on, unused initializers (and inputs, when asked); returns the "
            "number of nodes removed.")
        .def(
            "toposort", [](onnx::ModelProto& proto) { toposort(proto); },
            "Orders the nodes so that each comes after the producers of its inputs.")
        .def(
            "fold_constants",
            [](onnx::ModelProto& proto) {
                py::gil_scoped_release release;
                return fold_constants(proto).nodes_folded;
            },
            "Folds the nodes whose inputs are all constant (`surgeon sanitize --fold-constants`); returns the "
            "number of nodes folded.")
        .def(
            "extract",
            [](const onnx::ModelProto& proto, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs) {
                std::vector<SubgraphTensor> in, out;
                for (const std::string& name : inputs) in.push_back({name, std::nullopt, std::nullopt});
                for (const std::string& name : outputs) out.push_back({name, std::nullopt, std::nullopt});
                return extract_subgraph(proto, in, out);
            },
            "inputs"_a, "outputs"_a, "A new model computing `outputs` from `inputs` (`surgeon extract`).");
}

}  // namespace polygraphy::python
