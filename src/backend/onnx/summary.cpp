// str_from_onnx: Polygraphy's text summary of an ONNX model (backend/onnx/util.py's str_from_onnx).
#include <map>

#include "backend/onnx/domain.h"
#include "common/text_util.h"
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"
#include "polygraphy/common/numpy_print.h"

namespace polygraphy {
namespace {

using text::indent_block;
using text::strip;

// Polygraphy's MetadataTuple: unknown fields are left out; nothing known prints nothing.
struct Meta {
    std::optional<std::string> dtype;
    std::optional<std::string> shape;  // already a Python tuple: "(1, 'n', -1)"
    std::string str() const {
        std::vector<std::string> items;
        if (dtype) items.push_back("dtype=" + *dtype);
        if (shape) items.push_back("shape=" + *shape);
        if (items.empty()) return "";
        std::string out = "[";
        for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
        return out + "]";
    }
};

using MetaList = std::vector<std::pair<std::string, Meta>>;
using MetaMap = std::map<std::string, Meta>;

std::string meta_list_str(const MetaList& list) {
    std::string out = "{";
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (i) out += ",\n ";
        out += strip(list[i].first + " " + list[i].second.str());
    }
    return out + "}";
}

std::optional<std::string> dtype_str(int32_t onnx_type) {
    const DataType dtype = dtype_from_onnx(onnx_type);
    if (dtype == DataType::kUndefined) return std::nullopt;
    return std::string(dtype_name(dtype));
}

std::string dims_tuple(const google::protobuf::RepeatedField<int64_t>& dims) {
    std::string out = "(";
    for (int i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
    if (dims.size() == 1) out += ",";
    return out + ")";
}

std::string dims_list(const google::protobuf::RepeatedField<int64_t>& dims) {
    std::string out = "[";
    for (int i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
    return out + "]";
}

Meta meta_of(const onnx::ValueInfoProto& value_info) {
    Meta meta;
    const auto& type = value_info.type();
    if (type.has_tensor_type()) meta.dtype = dtype_str(type.tensor_type().elem_type());
    // As Polygraphy's get_shape: a missing shape is an empty one; unset dims are -1.
    std::string shape = "(";
    int rank = 0;
    if (type.has_tensor_type() && type.tensor_type().has_shape()) {
        for (const auto& dim : type.tensor_type().shape().dim()) {
            if (rank++) shape += ", ";
            if (dim.value_case() == onnx::TensorShapeProto_Dimension::kDimParam)
                shape += "'" + dim.dim_param() + "'";
            else if (dim.value_case() == onnx::TensorShapeProto_Dimension::kDimValue)
                shape += std::to_string(dim.dim_value());
            else
                shape += "-1";
        }
    }
    if (rank == 1) shape += ",";
    meta.shape = shape + ")";
    return meta;
}

Meta meta_of(const onnx::TensorProto& tensor) {
    return Meta{dtype_str(tensor.data_type()), dims_tuple(tensor.dims())};
}

// The values of a tensor as numpy prints them, or Polygraphy's placeholder (and one logged error).
std::string values_str(const onnx::TensorProto& tensor, const OnnxSummaryOptions& options) {
    try {
        Tensor values = options.decode ? options.decode(tensor) : tensor_from_proto(tensor);
        // Floats numpy lacks (bfloat16, float8) print at their exact float32 values, as onnx's to_array gives them.
        if (dtype_is_floating(values.dtype()) && !dtype_to_npy_descr(values.dtype())) values = values.cast(DataType::kFloat32);
        return numpy::array_str(values);
    } catch (const std::exception& error) {
        logger().log_once(Severity::kError, std::string("Failed to load weights.\nNote: Error was: ") + error.what());
    }
    return "<error: failed to load weights>";
}

std::string tensor_attr_str(const onnx::TensorProto& tensor, const OnnxSummaryOptions& options) {
    const auto dtype = dtype_str(tensor.data_type());
    std::string out = "Tensor: [dtype=" + dtype.value_or("None") + ", shape=" + dims_list(tensor.dims()) + "]";
    if (options.show_weights) out += " | Values:\n" + indent_block(values_str(tensor, options));
    return out;
}

std::string python_str_list(const google::protobuf::RepeatedPtrField<std::string>& items) {
    return python_list_repr(std::vector<std::string>(items.begin(), items.end()));
}

const char* attr_type_name(int type) {
    switch (type) {
        case onnx::AttributeProto::UNDEFINED: return "UNDEFINED";
        case onnx::AttributeProto::SPARSE_TENSOR: return "SPARSE_TENSOR";
        case onnx::AttributeProto::SPARSE_TENSORS: return "SPARSE_TENSORS";
        case onnx::AttributeProto::TYPE_PROTO: return "TYPE_PROTO";
        case onnx::AttributeProto::TYPE_PROTOS: return "TYPE_PROTOS";
        default: return nullptr;
    }
}

std::string str_from_graph(const onnx::GraphProto& graph, MetaMap tensors, const OnnxSummaryOptions& options,
                           int indent_level);

// One node as Polygraphy's str_from_layer prints it: `Node 0    | name [Op: Add]`, inputs, outputs.
std::string str_from_layer(const std::string& prefix, int index, const std::string& name, const std::string& op,
                           const MetaList& inputs, const MetaList& outputs) {
    std::string index_text = std::to_string(index);
    if (index_text.size() < 4) index_text.append(4 - index_text.size(), ' ');
    std::string out = prefix + " " + index_text + " | " + name + " [Op: " + op + "]\n";
    out += indent_block(meta_list_str(inputs));
    const bool both = !inputs.empty() && !outputs.empty();
    out += both ? "\n" : "";
    const int level = both ? 1 : 0;
    out += indent_block(" -> " + strip(indent_block(meta_list_str(outputs), level)), level) + "\n";
    return out;
}

std::string attrs_str(const onnx::NodeProto& node, const MetaMap& tensors, const OnnxSummaryOptions& options,
                      int indent_level) {
    std::vector<std::pair<std::string, std::string>> attrs;
    for (const auto& attr : node.attribute()) {
        std::string value;
        switch (attr.type()) {
            case onnx::AttributeProto::FLOAT: value = python_float_repr(attr.f()); break;
            case onnx::AttributeProto::INT: value = std::to_string(attr.i()); break;
            case onnx::AttributeProto::STRING: value = attr.s(); break;
            case onnx::AttributeProto::TENSOR: value = tensor_attr_str(attr.t(), options); break;
            case onnx::AttributeProto::GRAPH:
                value = "\n" + str_from_graph(attr.g(), tensors, options, indent_level + 2);
                break;
            case onnx::AttributeProto::GRAPHS:  // beyond Polygraphy, which skips them
                for (const auto& graph : attr.graphs()) value += "\n" + str_from_graph(graph, tensors, options, indent_level + 2);
                break;
            case onnx::AttributeProto::FLOATS: {
                value = "[";
                for (int i = 0; i < attr.floats_size(); ++i) value += (i ? ", " : "") + python_float_repr(attr.floats(i));
                value += "]";
                break;
            }
            case onnx::AttributeProto::INTS: {
                value = "[";
                for (int i = 0; i < attr.ints_size(); ++i) value += (i ? ", " : "") + std::to_string(attr.ints(i));
                value += "]";
                break;
            }
            case onnx::AttributeProto::STRINGS: value = python_str_list(attr.strings()); break;
            case onnx::AttributeProto::TENSORS: {  // beyond Polygraphy, which skips them
                value = "[";
                for (int i = 0; i < attr.tensors_size(); ++i) value += (i ? ", " : "") + tensor_attr_str(attr.tensors(i), options);
                value += "]";
                break;
            }
            default: {
                if (const char* type_name = attr_type_name(attr.type()))
                    logger().warning(std::string("Attribute of type ") + type_name +
                                     " is currently unsupported. Skipping attribute.");
                else
                    logger().warning("Attribute type: " + std::to_string(attr.type()) +
                                     " was not recognized. Was the graph generated with a newer IR version than the "
                                     "installed `onnx` package? Skipping attribute.");
                continue;
            }
        }
        bool replaced = false;  // a repeated name keeps its first place and its last value, as a dict
        for (auto& entry : attrs)
            if (entry.first == attr.name()) {
                entry.second = value;
                replaced = true;
            }
        if (!replaced) attrs.emplace_back(attr.name(), std::move(value));
    }
    std::string out;
    if (!attrs.empty()) out += indent_block("---- Attributes ----") + "\n";
    const std::string prefix = node.name().empty() ? "" : node.name() + ".";
    for (const auto& [key, value] : attrs) out += indent_block(prefix + key + " = " + value) + "\n";
    return out;
}

MetaList names_and_meta(const google::protobuf::RepeatedPtrField<std::string>& names, const MetaMap& tensors,
                        const std::set<std::string>& initializers) {
    MetaList list;
    for (const auto& name : names) {
        const auto found = tensors.find(name);
        const Meta meta = found == tensors.end() ? Meta{} : found->second;
        list.emplace_back(initializers.count(name) ? "Initializer | " + name : name, meta);
    }
    return list;
}

std::string nodes_str(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, const MetaMap& tensors,
                      const std::set<std::string>& initializers, const OnnxSummaryOptions& options, int indent_level) {
    std::string out = "---- " + std::to_string(nodes.size()) + " Node(s) ----\n";
    if (!options.show_layers) return out;
    for (int index = 0; index < nodes.size(); ++index) {
        const auto& node = nodes[index];
        out += str_from_layer("Node", index, node.name(), node.op_type(),
                              names_and_meta(node.input(), tensors, initializers),
                              names_and_meta(node.output(), tensors, initializers));
        if (options.show_attrs) out += attrs_str(node, tensors, options, indent_level);
        out += "\n";
    }
    return out;
}

std::string str_from_graph(const onnx::GraphProto& graph, MetaMap tensors, const OnnxSummaryOptions& options,
                           int indent_level) {
    std::set<std::string> initializers;
    MetaList initializer_meta;
    for (const auto& init : graph.initializer()) {
        initializers.insert(init.name());
        initializer_meta.emplace_back(init.name(), meta_of(init));
    }
    MetaList input_meta, output_meta;
    for (const auto& input : graph.input())
        if (!initializers.count(input.name())) input_meta.emplace_back(input.name(), meta_of(input));
    for (const auto& output : graph.output()) output_meta.emplace_back(output.name(), meta_of(output));

    // Subgraphs see their parents' tensors; their own declarations take precedence.
    for (const auto& value_info : graph.value_info()) tensors[value_info.name()] = meta_of(value_info);
    for (const auto* list : {&initializer_meta, &input_meta, &output_meta})
        for (const auto& [name, meta] : *list) tensors[name] = meta;

    const std::string graph_type = indent_level == 0 ? "Graph" : "Subgraph";
    std::string out;
    if (options.show_attrs && !graph.doc_string().empty()) out += "---- Docstring ----\n" + graph.doc_string() + "\n\n";
    out += "---- " + std::to_string(input_meta.size()) + " " + graph_type + " Input(s) ----\n" +
           meta_list_str(input_meta) + "\n\n";
    out += "---- " + std::to_string(output_meta.size()) + " " + graph_type + " Output(s) ----\n" +
           meta_list_str(output_meta) + "\n\n";
    out += "---- " + std::to_string(initializer_meta.size()) + " Initializer(s) ----\n";
    if (options.show_weights) {
        for (const auto& init : graph.initializer())
            out += "Initializer | " + init.name() + " [dtype=" + dtype_str(init.data_type()).value_or("None") +
                   ", shape=" + dims_list(init.dims()) + "] | Values:\n" + indent_block(values_str(init, options)) + "\n\n";
        if (graph.initializer().empty()) out += "{}\n\n";
    } else if (options.show_layers) {
        out += meta_list_str(initializer_meta) + "\n\n";
    } else {
        out += "\n";
    }
    out += nodes_str(graph.node(), tensors, initializers, options, indent_level);
    return indent_block(out, indent_level);
}

// Beyond Polygraphy: local functions, each like a node (name, domain, inputs -> outputs) followed
// by its attribute names and its nodes.
std::string functions_str(const onnx::ModelProto& model, const OnnxSummaryOptions& options) {
    std::string out = "---- " + std::to_string(model.functions_size()) + " Local Function(s) ----\n";
    for (int index = 0; index < model.functions_size(); ++index) {
        const auto& function = model.functions(index);
        const MetaMap tensors;  // onnx 1.12's FunctionProto has no value_info: names only
        const std::set<std::string> none;
        const std::string domain = display_domain(function.domain());
        out += str_from_layer("Function", index, function.name(), "Function, Domain: " + domain,
                              names_and_meta(function.input(), tensors, none),
                              names_and_meta(function.output(), tensors, none));
        std::string body;
        if (function.attribute_size() > 0) {
            const std::vector<std::string> names(function.attribute().begin(), function.attribute().end());
            body += "Attributes: " + python_list_repr(names) + "\n";
        }
        body += nodes_str(function.node(), tensors, none, options, 1);
        out += indent_block(body) + "\n\n";
    }
    return out;
}

std::string opsets_str(const onnx::ModelProto& model) {
    std::string default_opset = "Unknown";
    std::vector<std::string> others;
    for (const auto& opset : model.opset_import()) {
        if (opset.domain().empty())
            default_opset = std::to_string(opset.version());
        else
            others.push_back("'" + opset.domain() + "': " + std::to_string(opset.version()));
    }
    std::string out = " | ONNX Opset: " + default_opset;
    if (!others.empty()) {
        out += " | Other Opsets: {";
        for (std::size_t i = 0; i < others.size(); ++i) out += (i ? ", " : "") + others[i];
        out += "}";
    }
    return out;
}

}  // namespace

std::string str_from_onnx(const onnx::ModelProto& model, const OnnxSummaryOptions& options) {
    std::string out = "Name: " + model.graph().name() + opsets_str(model) + "\n";
    out += "IR Version: " + std::to_string(model.ir_version());
    if (!model.producer_name().empty() || !model.producer_version().empty())
        out += " | Producer: " + strip(model.producer_name() + " " + model.producer_version());
    out += "\n\n";
    out += str_from_graph(model.graph(), {}, options, 0);
    if (model.functions_size() > 0) out += "\n" + functions_str(model, options);
    return strip(out);
}

}  // namespace polygraphy
