// The structure-aware mutator of the onnx_structure fuzz target (see onnx_mutator.h).
#include "onnx_mutator.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

namespace polygraphy::fuzz {
namespace {

using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

// Real operator names (and a few that exist nowhere), so that swapped op types meet real schemas.
const std::vector<std::string> kOpTypes = {"Conv",
                                           "Relu",
                                           "GlobalAveragePool",
                                           "GlobalMaxPool",
                                           "Shape",
                                           "Split",
                                           "Scan",
                                           "If",
                                           "Loop",
                                           "Reshape",
                                           "Gather",
                                           "Concat",
                                           "MatMul",
                                           "Gemm",
                                           "Add",
                                           "Mul",
                                           "Slice",
                                           "Resize",
                                           "ReduceMean",
                                           "ReduceSum",
                                           "LayerNormalization",
                                           "BatchNormalization",
                                           "GroupNormalization",
                                           "Cast",
                                           "CastLike",
                                           "Constant",
                                           "Identity",
                                           "Transpose",
                                           "Squeeze",
                                           "Unsqueeze",
                                           "Softmax",
                                           "MaxPool",
                                           "AveragePool",
                                           "Where",
                                           "Expand",
                                           "Tile",
                                           "Pad",
                                           "TopK",
                                           "Clip",
                                           "Sum",
                                           "Max",
                                           "Dropout",
                                           "Flatten",
                                           "Size",
                                           "ConstantOfShape",
                                           "Range",
                                           "NonZero",
                                           "Einsum",
                                           "LSTM",
                                           "GRU",
                                           "RNN",
                                           "QuantizeLinear",
                                           "DequantizeLinear",
                                           "SequenceConstruct",
                                           "SplitToSequence",
                                           "SequenceAt",
                                           "Optional",
                                           "OptionalGetElement",
                                           "Attention",
                                           "FusedConv",
                                           "Gelu",
                                           "SkipLayerNormalization",
                                           "Trilu",
                                           "ArgMax",
                                           "Not",
                                           "Equal",
                                           "Less",
                                           "NonMaxSuppression",
                                           "ScatterND",
                                           "GatherElements",
                                           "DepthToSpace",
                                           "InstanceNormalization",
                                           "LRN",
                                           "Celu",
                                           "Sigmoid",
                                           "NotAnOperator"};
const std::vector<std::string> kDomains = {"", "ai.onnx", "com.microsoft", "custom", "ai.onnx.ml"};
const std::vector<std::string> kAttributeNames = {"axis",
                                                  "axes",
                                                  "perm",
                                                  "to",
                                                  "value",
                                                  "body",
                                                  "then_branch",
                                                  "else_branch",
                                                  "num_scan_inputs",
                                                  "scan_input_axes",
                                                  "scan_output_directions",
                                                  "split",
                                                  "num_outputs",
                                                  "kernel_shape",
                                                  "pads",
                                                  "strides",
                                                  "dilations",
                                                  "group",
                                                  "mode",
                                                  "keepdims",
                                                  "epsilon",
                                                  "alpha",
                                                  "beta",
                                                  "transA",
                                                  "transB",
                                                  "start",
                                                  "end",
                                                  "allowzero",
                                                  "value_float",
                                                  "value_ints",
                                                  "direction",
                                                  "hidden_size",
                                                  "stash_type",
                                                  "equation",
                                                  "largest"};
const std::vector<int64_t> kOpsets = {1, 6, 7, 9, 11, 12, 13, 14, 15, 16, 17, 17, 17, 18, 19, 21, 23, 0, -1, 1000};
const std::vector<int64_t> kInts = {0, 1, 2, 3, -1, -2, 7, 64, 1000, INT64_MAX, INT64_MIN, int64_t{1} << 40};
const std::vector<onnx::AttributeProto::AttributeType> kAttributeTypes = {
    onnx::AttributeProto::UNDEFINED, onnx::AttributeProto::FLOAT,  onnx::AttributeProto::INT,
    onnx::AttributeProto::STRING,    onnx::AttributeProto::TENSOR, onnx::AttributeProto::GRAPH,
    onnx::AttributeProto::FLOATS,    onnx::AttributeProto::INTS,   onnx::AttributeProto::STRINGS,
    onnx::AttributeProto::TENSORS,   onnx::AttributeProto::GRAPHS, onnx::AttributeProto::SPARSE_TENSOR,
    onnx::AttributeProto::TYPE_PROTO};
constexpr int kMaxMutationDepth = 6;  // subgraphs deeper than this are not collected for mutation

class Mutator {
public:
    Mutator(onnx::ModelProto& model, unsigned seed) : model_(model), rng_(seed == 0 ? 1 : seed) { collect(); }

    // Applies one to three structural mutations.
    void mutate() {
        const std::size_t count = 1 + below(3);
        for (std::size_t i = 0; i < count; ++i) {
            mutate_once();
            collect();  // mutations add and remove nodes and subgraphs
        }
    }

private:
    std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng_() % n); }
    bool one_in(std::size_t n) { return below(n) == 0; }
    template <typename T>
    const T& pick(const std::vector<T>& items) {
        return items[below(items.size())];
    }

    void collect() {
        graphs_.clear();
        node_lists_.clear();
        names_.clear();
        collect_graph(model_.mutable_graph(), 0);
        for (auto& function : *model_.mutable_functions()) {
            node_lists_.push_back(function.mutable_node());
            for (const auto& name : function.input()) names_.push_back(name);
            for (const auto& name : function.output()) names_.push_back(name);
        }
    }

    void collect_graph(onnx::GraphProto* graph, int depth) {
        graphs_.push_back(graph);
        node_lists_.push_back(graph->mutable_node());
        for (const auto& value : graph->input()) names_.push_back(value.name());
        for (const auto& value : graph->output()) names_.push_back(value.name());
        for (const auto& tensor : graph->initializer()) names_.push_back(tensor.name());
        for (auto& node : *graph->mutable_node()) {
            for (const auto& name : node.input()) names_.push_back(name);
            for (const auto& name : node.output()) names_.push_back(name);
            if (depth >= kMaxMutationDepth) continue;
            for (auto& attribute : *node.mutable_attribute()) {
                if (attribute.has_g()) collect_graph(attribute.mutable_g(), depth + 1);
                for (auto& g : *attribute.mutable_graphs()) collect_graph(&g, depth + 1);
            }
        }
    }

    std::string some_name() {
        if (names_.empty() || one_in(4)) return "t" + std::to_string(below(1000));
        return pick(names_);
    }
    std::string fresh_name() { return "fz" + std::to_string(rng_()); }

    // A random node of any graph or function; nullptr when there is none.
    onnx::NodeProto* some_node(Nodes** list_out = nullptr, int* index_out = nullptr) {
        std::vector<std::pair<Nodes*, int>> all;
        for (Nodes* list : node_lists_)
            for (int i = 0; i < list->size(); ++i) all.emplace_back(list, i);
        if (all.empty()) return nullptr;
        auto [list, index] = all[below(all.size())];
        if (list_out) *list_out = list;
        if (index_out) *index_out = index;
        return list->Mutable(index);
    }

    onnx::NodeProto* node_with_graph_attribute() {
        std::vector<onnx::NodeProto*> found;
        for (Nodes* list : node_lists_)
            for (auto& node : *list)
                for (const auto& attribute : node.attribute())
                    if (attribute.has_g() || attribute.graphs_size() ||
                        attribute.type() == onnx::AttributeProto::GRAPH) {
                        found.push_back(&node);
                        break;
                    }
        return found.empty() ? nullptr : found[below(found.size())];
    }

    onnx::GraphProto small_graph() {
        onnx::GraphProto graph;
        graph.set_name("fz_body");
        if (one_in(4)) return graph;  // an empty body
        const std::string in = some_name(), out = fresh_name();
        auto* node = graph.add_node();
        node->set_op_type(one_in(3) ? pick(kOpTypes) : "Identity");
        node->add_input(in);
        node->add_output(out);
        if (one_in(2)) graph.add_input()->set_name(fresh_name());
        graph.add_output()->set_name(one_in(5) ? in : out);
        return graph;
    }

    void fill_small_tensor(onnx::TensorProto* tensor) {
        tensor->set_name(one_in(2) ? fresh_name() : "");
        switch (below(4)) {
            case 0:  // an int64 scalar
                tensor->set_data_type(onnx::TensorProto::INT64);
                tensor->add_int64_data(pick(kInts));
                break;
            case 1:  // an int64 vector, as shapes and axes are given
                tensor->set_data_type(onnx::TensorProto::INT64);
                tensor->add_dims(2);
                tensor->add_int64_data(static_cast<int64_t>(below(4)));
                tensor->add_int64_data(one_in(3) ? -1 : static_cast<int64_t>(below(4)));
                break;
            case 2:  // float32 of shape [2]
                tensor->set_data_type(onnx::TensorProto::FLOAT);
                tensor->add_dims(2);
                tensor->add_float_data(1.5f);
                tensor->add_float_data(one_in(3) ? std::nanf("") : -2.0f);
                break;
            default:  // a declaration that disagrees with its data
                tensor->set_data_type(static_cast<int>(below(17)));
                tensor->add_dims(static_cast<int64_t>(below(5)));
                if (one_in(2)) tensor->set_raw_data(std::string(below(9), '\x01'));
                break;
        }
    }

    void fill_attribute(onnx::AttributeProto* attribute, onnx::AttributeProto::AttributeType type) {
        attribute->set_type(type);
        switch (type) {
            case onnx::AttributeProto::FLOAT:
                attribute->set_f(one_in(4) ? std::numeric_limits<float>::infinity() : static_cast<float>(below(5)) - 1);
                break;
            case onnx::AttributeProto::INT:
                attribute->set_i(pick(kInts));
                break;
            case onnx::AttributeProto::STRING:
                attribute->set_s(one_in(2) ? "constant" : "");
                break;
            case onnx::AttributeProto::TENSOR:
                fill_small_tensor(attribute->mutable_t());
                break;
            case onnx::AttributeProto::GRAPH:
                *attribute->mutable_g() = small_graph();
                break;
            case onnx::AttributeProto::FLOATS:
                for (std::size_t i = below(4); i > 0; --i) attribute->add_floats(static_cast<float>(i));
                break;
            case onnx::AttributeProto::INTS:
                for (std::size_t i = below(5); i > 0; --i) attribute->add_ints(pick(kInts));
                break;
            case onnx::AttributeProto::STRINGS:
                for (std::size_t i = below(3); i > 0; --i) attribute->add_strings("s" + std::to_string(i));
                break;
            case onnx::AttributeProto::TENSORS:
                for (std::size_t i = below(3); i > 0; --i) fill_small_tensor(attribute->add_tensors());
                break;
            case onnx::AttributeProto::GRAPHS:
                for (std::size_t i = below(3); i > 0; --i) *attribute->add_graphs() = small_graph();
                break;
            case onnx::AttributeProto::SPARSE_TENSOR: {
                auto* sparse = attribute->mutable_sparse_tensor();
                fill_small_tensor(sparse->mutable_values());
                if (one_in(2)) fill_small_tensor(sparse->mutable_indices());
                sparse->add_dims(static_cast<int64_t>(below(6)));
                break;
            }
            case onnx::AttributeProto::TYPE_PROTO:
                attribute->mutable_tp()->mutable_tensor_type()->set_elem_type(static_cast<int>(below(17)));
                break;
            default:
                break;  // UNDEFINED: a type and no value
        }
    }

    void clear_value(onnx::AttributeProto* attribute) {
        const std::string name = attribute->name();
        const std::string ref = attribute->ref_attr_name();
        attribute->Clear();
        attribute->set_name(name);
        if (!ref.empty()) attribute->set_ref_attr_name(ref);
    }

    void mutate_once() {
        Nodes* list = nullptr;
        int index = 0;
        onnx::NodeProto* node = some_node(&list, &index);
        switch (below(24)) {
            case 0:  // drop a node input (or all of them)
                if (!node || node->input_size() == 0) break;
                if (one_in(4))
                    node->clear_input();
                else
                    node->mutable_input()->erase(node->mutable_input()->begin() + below(node->input_size()));
                break;
            case 1:  // add a node input: an existing name, an empty one (an omitted optional) or a new one
                if (!node) break;
                *node->add_input() = one_in(3) ? std::string() : some_name();
                break;
            case 2:  // empty an input's name
                if (!node || node->input_size() == 0) break;
                node->set_input(static_cast<int>(below(node->input_size())), "");
                break;
            case 3:  // drop a node output (or all of them)
                if (!node || node->output_size() == 0) break;
                if (one_in(3))
                    node->clear_output();
                else
                    node->mutable_output()->erase(node->mutable_output()->begin() + below(node->output_size()));
                break;
            case 4:  // one output too many: new, empty, or a name that already exists
                if (!node) break;
                *node->add_output() = one_in(3) ? std::string() : one_in(2) ? some_name() : fresh_name();
                break;
            case 5:  // empty an output's name
                if (!node || node->output_size() == 0) break;
                node->set_output(static_cast<int>(below(node->output_size())), "");
                break;
            case 6:  // drop an attribute
                if (!node || node->attribute_size() == 0) break;
                node->mutable_attribute()->erase(node->mutable_attribute()->begin() + below(node->attribute_size()));
                break;
            case 7: {  // add an attribute (its name may already be there), of any type
                if (!node) break;
                auto* attribute = node->add_attribute();
                attribute->set_name(pick(kAttributeNames));
                fill_attribute(attribute, pick(kAttributeTypes));
                break;
            }
            case 8: {  // change an attribute's type: its value with it, or the type field alone
                if (!node || node->attribute_size() == 0) break;
                auto* attribute = node->mutable_attribute(static_cast<int>(below(node->attribute_size())));
                if (one_in(2)) {
                    attribute->set_type(pick(kAttributeTypes));
                } else {
                    clear_value(attribute);
                    fill_attribute(attribute, pick(kAttributeTypes));
                }
                break;
            }
            case 9: {  // remove a body (Scan's, Loop's, If's branches), or keep the attribute without its graph
                onnx::NodeProto* owner = node_with_graph_attribute();
                if (!owner) break;
                auto* attributes = owner->mutable_attribute();
                for (int i = 0; i < attributes->size(); ++i) {
                    auto* attribute = attributes->Mutable(i);
                    if (!attribute->has_g() && attribute->graphs_size() == 0) continue;
                    if (one_in(2))
                        attributes->erase(attributes->begin() + i);
                    else
                        attribute->clear_g();
                    break;
                }
                break;
            }
            case 10: {  // truncate a subgraph: remove a node, its outputs or its inputs
                if (graphs_.size() < 2) break;
                onnx::GraphProto* body = graphs_[1 + below(graphs_.size() - 1)];
                const std::size_t what = below(4);
                if (what == 0 && body->output_size())
                    body->mutable_output()->RemoveLast();
                else if (what == 1 && body->input_size())
                    body->mutable_input()->RemoveLast();
                else if (body->node_size())
                    body->mutable_node()->erase(body->mutable_node()->begin() + below(body->node_size()));
                break;
            }
            case 11:  // swap the op type
                if (!node) break;
                node->set_op_type(pick(kOpTypes));
                break;
            case 12:  // change the domain
                if (!node) break;
                node->set_domain(pick(kDomains));
                break;
            case 13: {  // rename a tensor so that names collide
                if (names_.empty()) break;
                const std::string name = pick(names_);
                auto* graph = graphs_[below(graphs_.size())];
                switch (below(5)) {
                    case 0:
                        if (node && node->output_size())
                            node->set_output(static_cast<int>(below(node->output_size())), name);
                        break;
                    case 1:
                        if (node && node->input_size())
                            node->set_input(static_cast<int>(below(node->input_size())), name);
                        break;
                    case 2:
                        if (graph->input_size())
                            graph->mutable_input(static_cast<int>(below(graph->input_size())))->set_name(name);
                        break;
                    case 3:
                        if (graph->output_size())
                            graph->mutable_output(static_cast<int>(below(graph->output_size())))->set_name(name);
                        break;
                    default:
                        if (graph->initializer_size())
                            graph->mutable_initializer(static_cast<int>(below(graph->initializer_size())))
                                ->set_name(name);
                        break;
                }
                break;
            }
            case 14: {  // change opset imports
                auto* imports = model_.mutable_opset_import();
                const std::size_t what = below(5);
                if (what == 0 && imports->size()) {
                    imports->Mutable(static_cast<int>(below(imports->size())))->set_version(pick(kOpsets));
                } else if (what == 1 && imports->size()) {
                    imports->erase(imports->begin() + below(imports->size()));
                } else if (what == 2) {
                    auto* added = model_.add_opset_import();  // possibly a second import of a domain
                    added->set_domain(pick(kDomains));
                    added->set_version(pick(kOpsets));
                } else if (what == 3) {
                    model_.set_ir_version(pick(std::vector<int64_t>{3, 4, 7, 8, 9, 10, 11, 0, -1}));
                } else {
                    for (auto& import : *imports)
                        if (import.domain().empty()) import.set_version(17);
                }
                break;
            }
            case 15: {  // insert a node of a random op on existing tensors
                Nodes* into = node_lists_[below(node_lists_.size())];
                onnx::NodeProto added;
                added.set_op_type(pick(kOpTypes));
                if (one_in(4)) added.set_domain(pick(kDomains));
                if (one_in(2)) added.set_name(fresh_name());
                for (std::size_t i = below(4); i > 0; --i) added.add_input(one_in(6) ? std::string() : some_name());
                for (std::size_t i = below(3); i > 0; --i) added.add_output(fresh_name());
                if (one_in(2)) {
                    auto* attribute = added.add_attribute();
                    attribute->set_name(pick(kAttributeNames));
                    fill_attribute(attribute, pick(kAttributeTypes));
                }
                const int at = static_cast<int>(below(static_cast<std::size_t>(into->size()) + 1));
                *into->Add() = std::move(added);
                for (int i = into->size() - 1; i > at; --i) into->SwapElements(i, i - 1);
                break;
            }
            case 16:  // remove a node
                if (!node) break;
                list->erase(list->begin() + index);
                break;
            case 17:  // duplicate a node (its outputs are then produced twice)
                if (!node) break;
                *list->Add() = onnx::NodeProto(*node);
                break;
            case 18: {  // wrap a copy of a node in a subgraph of a new If, Loop or Scan
                if (!node) break;
                onnx::NodeProto wrapper;
                const std::string op = pick(std::vector<std::string>{"If", "Loop", "Scan"});
                wrapper.set_op_type(op);
                wrapper.set_name(fresh_name());
                onnx::GraphProto body;
                body.set_name("fz_wrapped");
                *body.add_node() = *node;
                for (const auto& output : node->output()) body.add_output()->set_name(output);
                if (op == "If") {
                    wrapper.add_input(some_name());
                    for (const char* branch : {"then_branch", "else_branch"}) {
                        auto* attribute = wrapper.add_attribute();
                        attribute->set_name(branch);
                        attribute->set_type(onnx::AttributeProto::GRAPH);
                        *attribute->mutable_g() = body;
                    }
                } else {
                    if (op == "Loop") {
                        wrapper.add_input(one_in(2) ? "" : some_name());
                        wrapper.add_input(one_in(2) ? "" : some_name());
                    } else {
                        auto* count = wrapper.add_attribute();
                        count->set_name("num_scan_inputs");
                        count->set_type(onnx::AttributeProto::INT);
                        count->set_i(static_cast<int64_t>(below(3)));
                    }
                    wrapper.add_input(some_name());
                    body.add_input()->set_name(fresh_name());
                    auto* attribute = wrapper.add_attribute();
                    attribute->set_name("body");
                    attribute->set_type(onnx::AttributeProto::GRAPH);
                    *attribute->mutable_g() = std::move(body);
                }
                for (int i = 0; i < std::max(1, node->output_size()); ++i) wrapper.add_output(fresh_name());
                *list->Add() = std::move(wrapper);
                break;
            }
            case 19: {  // change a declared shape or dtype of a graph input, output or value_info
                auto* graph = graphs_[below(graphs_.size())];
                std::vector<onnx::ValueInfoProto*> values;
                for (auto& v : *graph->mutable_input()) values.push_back(&v);
                for (auto& v : *graph->mutable_output()) values.push_back(&v);
                for (auto& v : *graph->mutable_value_info()) values.push_back(&v);
                if (values.empty()) break;
                auto* tensor = values[below(values.size())]->mutable_type()->mutable_tensor_type();
                const std::size_t what = below(5);
                if (what == 0) {
                    tensor->set_elem_type(static_cast<int>(below(17)));
                } else if (what == 1) {
                    tensor->clear_shape();
                } else if (what == 2) {
                    tensor->mutable_shape()->add_dim()->set_dim_value(static_cast<int64_t>(below(4)));
                } else if (tensor->shape().dim_size()) {
                    auto* dim =
                        tensor->mutable_shape()->mutable_dim(static_cast<int>(below(tensor->shape().dim_size())));
                    if (what == 3)
                        dim->set_dim_param("n");
                    else
                        dim->set_dim_value(pick(std::vector<int64_t>{0, 1, 2, 3, 5, -1, -5}));
                }
                break;
            }
            case 20: {  // a local function made of a copy of a node, and a call to it
                if (!node) break;
                auto* function = model_.add_functions();
                function->set_name("fz_function" + std::to_string(below(3)));
                function->set_domain("custom");
                *function->add_node() = *node;
                for (const auto& input : node->input()) *function->add_input() = input;
                for (const auto& output : node->output()) *function->add_output() = output;
                auto* opset = function->add_opset_import();
                opset->set_domain("");
                opset->set_version(17);
                onnx::NodeProto call;
                call.set_op_type(function->name());
                call.set_domain("custom");
                for (std::size_t i = below(4); i > 0; --i) call.add_input(some_name());
                for (std::size_t i = 1 + below(3); i > 0; --i) call.add_output(fresh_name());
                *list->Add() = std::move(call);
                if (one_in(2)) {
                    auto* import = model_.add_opset_import();
                    import->set_domain("custom");
                    import->set_version(1);
                }
                break;
            }
            case 21: {  // a graph input, output or initializer removed
                auto* graph = graphs_[below(graphs_.size())];
                const std::size_t what = below(3);
                if (what == 0 && graph->input_size())
                    graph->mutable_input()->RemoveLast();
                else if (what == 1 && graph->output_size())
                    graph->mutable_output()->RemoveLast();
                else if (graph->initializer_size())
                    graph->mutable_initializer()->RemoveLast();
                break;
            }
            case 22: {  // a graph output added: an existing tensor, a missing one, or an empty name
                auto* graph = graphs_[below(graphs_.size())];
                auto* output = graph->add_output();
                output->set_name(one_in(4) ? std::string() : some_name());
                if (one_in(2)) output->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
                break;
            }
            default: {  // an initializer (or a Constant's value) of a small tensor
                auto* graph = graphs_[below(graphs_.size())];
                if (one_in(2)) {
                    auto* tensor = graph->add_initializer();
                    fill_small_tensor(tensor);
                    tensor->set_name(one_in(2) ? some_name() : fresh_name());
                } else {
                    auto* constant = graph->add_node();
                    constant->set_op_type("Constant");
                    constant->add_output(fresh_name());
                    auto* attribute = constant->add_attribute();
                    attribute->set_name(
                        pick(std::vector<std::string>{"value", "value_int", "value_ints", "sparse_value"}));
                    fill_attribute(attribute, pick(kAttributeTypes));
                }
                break;
            }
        }
    }

    onnx::ModelProto& model_;
    std::minstd_rand rng_;
    std::vector<onnx::GraphProto*> graphs_;  // graphs_[0] is the main graph
    std::vector<Nodes*> node_lists_;         // of every graph collected and every local function
    std::vector<std::string> names_;         // every tensor name seen (with repeats)
};

}  // namespace

onnx::ModelProto starter_model() {
    onnx::ModelProto model;
    model.set_ir_version(8);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    auto* graph = model.mutable_graph();
    graph->set_name("starter");
    auto declare = [](onnx::ValueInfoProto* info, const std::string& name, int elem_type, std::vector<int64_t> dims) {
        info->set_name(name);
        auto* tensor = info->mutable_type()->mutable_tensor_type();
        tensor->set_elem_type(elem_type);
        auto* shape = tensor->mutable_shape();
        for (int64_t dim : dims) shape->add_dim()->set_dim_value(dim);
    };
    declare(graph->add_input(), "x", onnx::TensorProto::FLOAT, {1, 2, 3, 3});
    auto add_node = [&](const std::string& op, const std::string& in, const std::string& out) {
        auto* node = graph->add_node();
        node->set_op_type(op);
        node->set_name(op + "_node");
        node->add_input(in);
        node->add_output(out);
    };
    add_node("Relu", "x", "r");
    add_node("Shape", "r", "s");
    add_node("GlobalAveragePool", "x", "y");
    declare(graph->add_output(), "s", onnx::TensorProto::INT64, {4});
    declare(graph->add_output(), "y", onnx::TensorProto::FLOAT, {1, 2, 1, 1});
    return model;
}

void mutate_structure(onnx::ModelProto& model, unsigned seed) {
    Mutator(model, seed).mutate();
}

bool parse_model(const uint8_t* data, std::size_t size, onnx::ModelProto& model) {
    if (size > static_cast<std::size_t>(INT_MAX)) return false;
    google::protobuf::io::ArrayInputStream raw(data, static_cast<int>(size));
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(INT_MAX);
    return model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

std::size_t serialize_into(const onnx::ModelProto& model, uint8_t* data, std::size_t max_size) {
    std::string bytes;
    if (!model.SerializeToString(&bytes) || bytes.empty() || bytes.size() > max_size) return 0;
    std::memcpy(data, bytes.data(), bytes.size());
    return bytes.size();
}

std::size_t cross_over(const uint8_t* data1, std::size_t size1, const uint8_t* data2, std::size_t size2, uint8_t* out,
                       std::size_t max_out_size, unsigned seed) {
    onnx::ModelProto first, second;
    if (!parse_model(data1, size1, first) || !parse_model(data2, size2, second) || !first.has_graph() ||
        !second.has_graph())
        return 0;
    std::minstd_rand rng(seed == 0 ? 1 : seed);
    auto* graph = first.mutable_graph();
    const auto& other = second.graph();
    if (other.node_size()) {
        const int begin = static_cast<int>(rng() % static_cast<unsigned>(other.node_size()));
        const int end = begin + 1 + static_cast<int>(rng() % static_cast<unsigned>(other.node_size() - begin));
        for (int i = begin; i < end; ++i) *graph->add_node() = other.node(i);
    }
    if (rng() % 2)
        for (const auto& initializer : other.initializer()) *graph->add_initializer() = initializer;
    if (rng() % 2)
        for (const auto& value : other.value_info()) *graph->add_value_info() = value;
    if (rng() % 2 && other.output_size()) *graph->add_output() = other.output(0);
    if (rng() % 4 == 0) *first.mutable_opset_import() = second.opset_import();
    if (rng() % 4 == 0)
        for (const auto& function : second.functions()) *first.add_functions() = function;
    return serialize_into(first, out, max_out_size);
}

}  // namespace polygraphy::fuzz
