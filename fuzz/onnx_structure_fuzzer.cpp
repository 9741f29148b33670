// Structure-aware fuzzing of ONNX models (issue 33): a custom mutator that parses the input as an
// onnx::ModelProto and changes its structure (node inputs and outputs, attributes and their types,
// subgraph bodies, op types and domains, tensor names, opset imports, declared shapes), so that
// nearly every input is a model that parses and reaches the passes behind the tools, where
// byte-level mutation mostly breaks the protobuf encoding. The mutator is this project's own; it
// draws every choice from a std::minstd_rand seeded with libFuzzer's seed, so a run is reproducible.
//
// Each input goes, in process, through what the tools do with a model:
//   - load and check: onnx_from_bytes (which runs the node check), find_node_problems and
//     check_nodes directly;
//   - `check lint` (lint_onnx on the model as parsed, unchecked, as the tool does);
//   - `inspect capability` (infer_value_info, check_capability with the built-in runtime's checker);
//   - `surgeon sanitize --fold-constants`, `convert --fp-to-fp16`, shape inference, on copies;
//   - `surgeon extract` (extract_subgraph) with declared and with "auto" boundary types;
//   - the built-in runtime's session preparation (never `run`: fuzzed shapes can ask for terabytes).
// Passes that may execute kernels (lint's test inference, capability, folding, fp16, shape inference
// with its runtime fallback, "auto" extraction) only see models whose tensors are all small and
// static and that have no operator whose output size comes from values (kernel_safe below).
//
// Properties checked besides "no crash, only PolygraphyException refuses":
//   - onnx_from_bytes accepts a parsed model exactly when find_node_problems finds nothing, and
//     refuses it with MalformedNodeError (listing the problems) otherwise; check_nodes agrees;
//   - every problem's message starts with "Malformed " and names the node;
//   - a model with problems is refused by every pass that reads nodes (shape inference, folding,
//     fp16, capability's inference, session preparation) and lint reports it as invalid;
//   - a model that passed the check still passes it after folding, fp16 conversion, shape
//     inference and extraction, and after a serialize/parse round trip.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include "fuzz_support.h"
#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/lint.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/ref/evaluator.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using namespace polygraphy;
using Nodes = google::protobuf::RepeatedPtrField<onnx::NodeProto>;

// ---- the mutator ---------------------------------------------------------------------------------

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

// A small valid model, the starting point when an input does not parse: x -> Relu -> Shape, and
// x -> GlobalAveragePool -> y, at opset 17.
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

// Parses as onnx_from_bytes does (no 64 MiB limit); false when protobuf refuses the bytes.
bool parse(const uint8_t* data, std::size_t size, onnx::ModelProto& model) {
    if (size > static_cast<std::size_t>(INT_MAX)) return false;
    google::protobuf::io::ArrayInputStream raw(data, static_cast<int>(size));
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(INT_MAX);
    return model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

// Serializes into `data` when it fits in `max_size`; 0 otherwise.
std::size_t serialize_into(const onnx::ModelProto& model, uint8_t* data, std::size_t max_size) {
    std::string bytes;
    if (!model.SerializeToString(&bytes) || bytes.empty() || bytes.size() > max_size) return 0;
    std::memcpy(data, bytes.data(), bytes.size());
    return bytes.size();
}

// ---- what each input goes through ----------------------------------------------------------------

constexpr int64_t kMaxDim = 64;
constexpr int64_t kMaxTotalElements = 2048;  // over all inputs, initializers and constant tensors
constexpr int kMaxRank = 4;

// Operators whose output size comes from input values or attributes (or that loop on a value),
// which a fuzzed model can make astronomically large.
bool grows_from_values(const std::string& op) {
    static const std::vector<std::string> ops = {"ConstantOfShape",
                                                 "Expand",
                                                 "Tile",
                                                 "Range",
                                                 "Resize",
                                                 "Upsample",
                                                 "OneHot",
                                                 "Loop",
                                                 "Pad",
                                                 "CenterCropPad",
                                                 "Col2Im",
                                                 "MaxUnpool",
                                                 "ConvTranspose",
                                                 "RandomNormal",
                                                 "RandomUniform",
                                                 "RandomNormalLike",
                                                 "RandomUniformLike",
                                                 "Multinomial",
                                                 "Bernoulli",
                                                 "Einsum",
                                                 "TfIdfVectorizer",
                                                 "STFT",
                                                 "DFT",
                                                 "MelWeightMatrix",
                                                 "BlackmanWindow",
                                                 "HannWindow",
                                                 "HammingWindow",
                                                 "SequenceInsert",
                                                 "ConcatFromSequence",
                                                 "SplitToSequence",
                                                 "ImageDecoder",
                                                 "StringSplit",
                                                 "RegexFullMatch"};
    return std::find(ops.begin(), ops.end(), op) != ops.end();
}

struct Budget {
    int64_t elements = 0;
    bool add(int64_t n) {
        elements += n;
        return n >= 0 && elements <= kMaxTotalElements;
    }
};

bool small_dims(const google::protobuf::RepeatedField<int64_t>& dims, int64_t& numel) {
    if (dims.size() > kMaxRank) return false;
    numel = 1;
    for (int64_t dim : dims) {
        if (dim < 0 || dim > kMaxDim) return false;
        numel *= dim;
    }
    return true;
}

bool small_tensor(const onnx::TensorProto& tensor, Budget& budget) {
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.external_data_size()) return false;
    int64_t numel = 0;
    if (!small_dims(tensor.dims(), numel) || !budget.add(numel)) return false;
    // Integer values are often shapes, repeats or pads.
    for (int64_t v : tensor.int64_data())
        if (v < -kMaxDim || v > kMaxDim) return false;
    for (int32_t v : tensor.int32_data())
        if (v < -kMaxDim || v > kMaxDim) return false;
    if (tensor.data_type() == onnx::TensorProto::INT64 || tensor.data_type() == onnx::TensorProto::INT32) {
        const std::string& raw = tensor.raw_data();
        const std::size_t width = tensor.data_type() == onnx::TensorProto::INT64 ? 8 : 4;
        for (std::size_t at = 0; at + width <= raw.size(); at += width) {
            int64_t v = 0;
            if (width == 8)
                std::memcpy(&v, raw.data() + at, 8);
            else {
                int32_t v32 = 0;
                std::memcpy(&v32, raw.data() + at, 4);
                v = v32;
            }
            if (v < -kMaxDim || v > kMaxDim) return false;
        }
    }
    return true;
}

bool small_static_type(const onnx::TypeProto& type, Budget& budget) {
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return false;
    const auto& shape = type.tensor_type().shape();
    if (shape.dim_size() > kMaxRank) return false;
    int64_t numel = 1;
    for (const auto& dim : shape.dim()) {
        if (!dim.has_dim_value() || dim.dim_value() < 0 || dim.dim_value() > kMaxDim) return false;
        numel *= dim.dim_value();
    }
    return budget.add(numel);
}

bool small_nodes(const Nodes& nodes, Budget& budget, int depth);

bool small_graph(const onnx::GraphProto& graph, Budget& budget, int depth, bool check_inputs) {
    if (depth > 8) return false;
    if (check_inputs)
        for (const auto& input : graph.input())
            if (!small_static_type(input.type(), budget)) return false;
    if (graph.sparse_initializer_size()) return false;
    for (const auto& initializer : graph.initializer())
        if (!small_tensor(initializer, budget)) return false;
    return small_nodes(graph.node(), budget, depth);
}

bool small_nodes(const Nodes& nodes, Budget& budget, int depth) {
    for (const auto& node : nodes) {
        if (grows_from_values(node.op_type())) return false;
        for (const auto& attribute : node.attribute()) {
            if (attribute.has_sparse_tensor() || attribute.sparse_tensors_size()) return false;
            if (attribute.i() < -kMaxDim || attribute.i() > kMaxDim) return false;
            for (int64_t v : attribute.ints())
                if (v < -kMaxDim || v > kMaxDim) return false;
            if (attribute.ints_size() > kMaxRank * 2 + 2) return false;  // a shape of a Constant
            if (attribute.has_t() && !small_tensor(attribute.t(), budget)) return false;
            for (const auto& t : attribute.tensors())
                if (!small_tensor(t, budget)) return false;
            // Subgraph inputs are declared by the node that owns the body (often without shapes).
            if (attribute.has_g() && !small_graph(attribute.g(), budget, depth + 1, false)) return false;
            for (const auto& g : attribute.graphs())
                if (!small_graph(g, budget, depth + 1, false)) return false;
        }
    }
    return true;
}

// Whether passes that execute kernels may see the model: every tensor small and static, no
// operator whose output size a value decides, nothing external.
bool kernel_safe(const onnx::ModelProto& model) {
    Budget budget;
    if (!small_graph(model.graph(), budget, 0, true)) return false;
    for (const auto& function : model.functions())
        if (!small_nodes(function.node(), budget, 0)) return false;
    return true;
}

// Whether the node check finds anything; the first problem is printed, since a caller that asserts
// there is none aborts next.
bool has_problems(const onnx::ModelProto& model) {
    const std::vector<NodeProblem> problems = find_node_problems(model);
    if (!problems.empty()) std::fprintf(stderr, "node check: %s\n", problems.front().message().c_str());
    return !problems.empty();
}

// Runs `pass` and reports whether it threw a PolygraphyException (the documented refusals);
// anything else propagates and is a finding.
template <typename Fn>
bool refused(Fn&& pass) {
    try {
        pass();
    } catch (const PolygraphyException&) {
        return true;
    }
    return false;
}

TensorMap zero_feed(const TensorMetadata& metadata) {
    TensorMap feed;
    for (const auto& [name, entry] : metadata) {
        if (!entry.dtype || !entry.shape || is_shape_dynamic(*entry.shape))
            throw PolygraphyException("no static declaration for " + name);
        Shape shape;
        for (const Dim& dim : *entry.shape) shape.push_back(dim.value);
        feed.set(name, Tensor(*entry.dtype, shape));
    }
    return feed;
}

// `check lint`: the model as parsed, never checked before, as the tool lints it.
void lint(const onnx::ModelProto& model, bool problems, bool safe) {
    LintOptions options;
    options.num_threads = 1;
    if (safe) options.make_feed = zero_feed;
    const LintReport report = lint_onnx(model, options);
    if (problems) FUZZ_CHECK(!report.valid());  // every problem is an exception entry
    (void)report.to_json();
}

// A model with node problems: every pass that reads nodes refuses it.
void malformed_is_refused_everywhere(const onnx::ModelProto& model, bool safe) {
    FUZZ_CHECK(refused([&] { const ref::Session session(model, ref::SessionOptions{1}); }));
    FUZZ_CHECK(refused([&] {
        onnx::ModelProto copy = model;
        infer_value_info(copy);
    }));
    // Never throws for what it cannot infer; a refused declaration (a negative dimension) is a ModelError.
    (void)refused([&] { (void)infer_output_metadata(model, {}); });
    if (!safe) return;  // the refusal is the check at the start, but a wrong guess would run kernels
    FUZZ_CHECK(refused([&] {
        onnx::ModelProto copy = model;
        infer_shapes(copy);
    }));
    FUZZ_CHECK(refused([&] {
        onnx::ModelProto copy = model;
        fold_constants(copy);
    }));
    FUZZ_CHECK(refused([&] {
        onnx::ModelProto copy = model;
        convert_to_fp16(copy);
    }));
}

// `surgeon extract` from the graph inputs to (some of) the graph outputs.
void extract(const onnx::ModelProto& model, bool with_auto_types) {
    std::vector<SubgraphTensor> inputs, outputs;
    for (const auto& input : model.graph().input())
        inputs.push_back(with_auto_types ? SubgraphTensor{input.name(), std::nullopt, std::nullopt}
                                         : SubgraphTensor{input.name(), DataType::kFloat32, DynShape{Dim::named("n")}});
    for (const auto& output : model.graph().output()) {
        if (outputs.size() == 2) break;
        outputs.push_back(with_auto_types ? SubgraphTensor{output.name(), std::nullopt, std::nullopt}
                                          : SubgraphTensor{output.name(), DataType::kFloat32, DynShape{}});
    }
    OnnxModel extracted;
    try {
        extracted = extract_subgraph(model, inputs, outputs);
    } catch (const PolygraphyException&) {
        return;
    }
    FUZZ_CHECK(extracted && !has_problems(*extracted));
}

// A model that onnx_from_bytes accepted, through the tools' passes.
void well_formed_passes(const onnx::ModelProto& model, bool safe) {
    // The node check must be stable: what passed passes again after a round trip.
    OnnxModel again;
    try {
        again = onnx_from_bytes(bytes_from_onnx(model));
    } catch (const MalformedNodeError& error) {
        std::fprintf(stderr, "%s\n", error.what());
        FUZZ_CHECK(!"a model that passed the node check fails it after a round trip");
    } catch (const PolygraphyException&) {
        // a FormatError for a model over protobuf's limits
    }

    try {
        const ref::Session session(model, ref::SessionOptions{1});
        (void)session.execution_order().size();
    } catch (const PolygraphyException&) {
    }
    // A refused declaration (a negative dimension: RELIABILITY.md, F3) is a ModelError, as in onnx_model.
    (void)refused([&] { (void)infer_output_metadata(model, {}); });
    try {
        onnx::ModelProto copy = model;
        infer_value_info(copy);  // `inspect capability`'s inference: throws only for malformed nodes
        FUZZ_CHECK(!has_problems(copy));
        if (safe) {
            const CapabilityReport report = check_capability(copy, ref_node_checker(), "ref");
            FUZZ_CHECK(report.nodes.size() == static_cast<std::size_t>(copy.graph().node_size()));
            int next = 0;
            for (const auto& partition : report.partitions) {
                FUZZ_CHECK(partition.begin == next && partition.end > partition.begin);
                next = partition.end;
            }
            FUZZ_CHECK(next == copy.graph().node_size());
            (void)report.summary();
        }
    } catch (const MalformedNodeError& error) {
        std::fprintf(stderr, "%s\n", error.what());
        FUZZ_CHECK(!"capability's inference found malformed nodes in a checked model");
    } catch (const PolygraphyException&) {
    }

    extract(model, false);
    if (!safe) return;
    extract(model, true);
    // Passes that evaluate nodes: on copies, and what they produce still passes the node check.
    auto pass = [](const onnx::ModelProto& original, auto&& fn) {
        onnx::ModelProto copy = original;
        try {
            fn(copy);
        } catch (const MalformedNodeError& error) {
            std::fprintf(stderr, "%s\n", error.what());
            FUZZ_CHECK(!"a pass found malformed nodes in a checked model");
        } catch (const PolygraphyException&) {
            return;
        }
        // Without an ai.onnx opset import the check reads nodes at opset 1, where Cast's `to` is a
        // string; the passes write today's operators (lint reports the missing import).
        bool imports_default = false;
        for (const auto& import : original.opset_import())
            imports_default = imports_default || import.domain().empty() || import.domain() == "ai.onnx";
        FUZZ_CHECK(!imports_default || !has_problems(copy));
    };
    pass(model, [](onnx::ModelProto& m) { (void)infer_shapes(m); });
    pass(model, [](onnx::ModelProto& m) {
        FoldConstantsOptions options;
        options.num_passes = 2;
        options.size_threshold = std::size_t{1} << 16;
        (void)fold_constants(m, options);
    });
    pass(model, [](onnx::ModelProto& m) { (void)convert_to_fp16(m); });
}

}  // namespace

// libFuzzer reads its flags after this returns, so a default can be added here. -entropic=0 unless
// the command line says otherwise: every input of this target touches some 45,000 features of the
// library's 260,000 counters, and the entropic schedule's per-feature bookkeeping
// (InputCorpus::UpdateFeatureFrequency) took half of the time, the target itself 7% (perf, 2 cores
// under ASan): 500 executions took 18 s with it and 5 s without.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    polygraphy::fuzz::silence_logger();
    bool entropic_given = false;
    for (int i = 1; i < *argc; ++i) entropic_given = entropic_given || std::strncmp((*argv)[i], "-entropic=", 10) == 0;
    if (!entropic_given) {
        static std::vector<char*> args;
        args.assign(*argv, *argv + *argc);
        static char no_entropic[] = "-entropic=0";
        args.insert(args.begin() + 1, no_entropic);
        args.push_back(nullptr);
        *argc += 1;
        *argv = args.data();
    }
    return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    std::minstd_rand rng(seed == 0 ? 1 : seed);
    onnx::ModelProto original;
    if (!parse(data, size, original) || !original.has_graph()) {
        // Not a model: byte-level mutation half of the time, else a model built here.
        if (rng() % 2) return LLVMFuzzerMutate(data, size, max_size);
        original = starter_model();
    }
    // Now and then the bytes too, for the parser's refusals and for values the mutator never writes.
    if (rng() % 16 == 0) return LLVMFuzzerMutate(data, size, max_size);
    for (int attempt = 0; attempt < 3; ++attempt) {
        onnx::ModelProto model = original;
        Mutator(model, static_cast<unsigned>(rng())).mutate();
        if (const std::size_t written = serialize_into(model, data, max_size)) return written;
    }
    // Too large every time: a smaller model (one node fewer), or the input unchanged.
    onnx::ModelProto smaller = original;
    if (smaller.graph().node_size()) smaller.mutable_graph()->mutable_node()->RemoveLast();
    if (const std::size_t written = serialize_into(smaller, data, max_size)) return written;
    return size <= max_size ? size : LLVMFuzzerMutate(data, size, max_size);
}

// Crossing over: nodes (with their initializers and declarations) of the second model spliced into
// the first, so that the names of one meet the nodes of the other.
extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1, const uint8_t* data2, size_t size2,
                                            uint8_t* out, size_t max_out_size, unsigned int seed) {
    onnx::ModelProto first, second;
    if (!parse(data1, size1, first) || !parse(data2, size2, second) || !first.has_graph() || !second.has_graph())
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    onnx::ModelProto parsed;
    const bool parses = parse(data, size, parsed) && parsed.has_graph();
    OnnxModel model;
    try {
        model = onnx_from_bytes(std::string(reinterpret_cast<const char*>(data), size));
    } catch (const MalformedNodeError& error) {
        FUZZ_CHECK(parses && !error.problems().empty());
    } catch (const FormatError&) {
        FUZZ_CHECK(!parses);
        return 0;
    }
    FUZZ_CHECK(parses);

    const std::vector<NodeProblem> problems = find_node_problems(parsed);  // never throws
    FUZZ_CHECK(problems.empty() == static_cast<bool>(model));
    for (const NodeProblem& problem : problems) {
        const std::string message = problem.message();
        FUZZ_CHECK(message.rfind("Malformed ", 0) == 0 && message.find(problem.node) != std::string::npos);
    }
    FUZZ_CHECK(refused([&] { check_nodes(parsed); }) == !problems.empty());

    const bool safe = kernel_safe(parsed);
    lint(parsed, !problems.empty(), safe);
    if (!model) {
        malformed_is_refused_everywhere(parsed, safe);
        return 0;
    }
    well_formed_passes(*model, safe);
    return 0;
}
