#include "polygraphy/backend/onnx/weight_strip.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <map>
#include <random>
#include <unordered_map>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/sparsity.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy {
namespace {

// Polygraphy's pattern tables: the ops whose weights are stripped and the input counts they match
// with, the input positions a QuantizeLinear->DequantizeLinear or Transpose chain may feed, the
// inputs each op may lose, and the size below which an input is kept.
const std::map<std::string, std::set<int>> kBaseInputCounts = {
    {"Conv", {2, 3}}, {"ConvTranspose", {2, 3}}, {"Gemm", {2, 3}},
    {"MatMul", {2}},  {"Gather", {2}},           {"Slice", {3, 4, 5}},
};
const std::map<std::string, std::set<int>> kChainedPositions = {
    {"Conv", {0}},
    {"ConvTranspose", {0}},
    {"Gemm", {0, 1, 2}},
    {"MatMul", {0, 1}},
};
const std::map<std::string, std::set<int>> kStrippableInputs = {{"QuantizeLinear", {0}}, {"Slice", {0}}};
const std::map<std::string, int64_t> kSizeThresholds = {
    {"Conv", 1}, {"ConvTranspose", 1}, {"Gather", 1024}, {"Gemm", 1}, {"Slice", 1024},
};

class PatternMatcher {
public:
    PatternMatcher(const onnx::GraphProto& graph, const std::set<std::string>& exclude)
        : graph_(graph), exclude_(exclude) {
        for (const auto& initializer : graph.initializer()) initializers_.emplace(initializer.name(), &initializer);
        for (const auto& output : graph.output()) graph_outputs_.insert(output.name());
        for (const auto& node : graph.node())
            for (const auto& input : node.input()) {
                auto& readers = consumers_[input];
                if (std::find(readers.begin(), readers.end(), &node) == readers.end()) readers.push_back(&node);
            }
    }

    std::set<std::string> run() {
        for (const auto& node : graph_.node()) {
            if (matches_base(node) || matches_chain(node)) take_inputs(node);
            if (!onnx::OpSchemaRegistry::Schema(node.op_type(), "")) take_inputs(node, /*plugin=*/true);
        }
        return std::move(selected_);
    }

private:
    static bool has_input_count(const std::map<std::string, std::set<int>>& table, const onnx::NodeProto& node) {
        const auto found = table.find(node.op_type());
        return found != table.end() && found->second.contains(node.input_size());
    }

    static bool matches_base(const onnx::NodeProto& node) {
        return node.output_size() == 1 && has_input_count(kBaseInputCounts, node);
    }

    // The single node reading `tensor`, when it is not a graph output and nothing else reads it.
    const onnx::NodeProto* sole_reader(const std::string& tensor) const {
        if (graph_outputs_.contains(tensor)) return nullptr;
        const auto found = consumers_.find(tensor);
        return found != consumers_.end() && found->second.size() == 1 ? found->second.front() : nullptr;
    }

    // A single-output node whose output is read, at one of kChainedPositions, by a base op.
    bool feeds_base_op(const onnx::NodeProto& node) const {
        if (node.output_size() != 1) return false;
        const onnx::NodeProto* reader = sole_reader(node.output(0));
        if (!reader || !matches_base(*reader)) return false;
        const auto positions = kChainedPositions.find(reader->op_type());
        if (positions == kChainedPositions.end()) return false;
        for (int position : positions->second)
            if (position < reader->input_size() && reader->input(position) == node.output(0)) return true;
        return false;
    }

    bool matches_chain(const onnx::NodeProto& node) const {
        if (node.op_type() == "Transpose") return node.input_size() == 1 && feeds_base_op(node);
        if (node.op_type() != "QuantizeLinear" || node.output_size() != 1 ||
            (node.input_size() != 2 && node.input_size() != 3))
            return false;
        const onnx::NodeProto* dequantize = sole_reader(node.output(0));
        return dequantize && dequantize->op_type() == "DequantizeLinear" &&
               (dequantize->input_size() == 2 || dequantize->input_size() == 3) &&
               dequantize->input(0) == node.output(0) && feeds_base_op(*dequantize);
    }

    void take_inputs(const onnx::NodeProto& node, bool plugin = false) {
        for (int index = 0; index < node.input_size(); ++index) {
            const std::string& name = node.input(index);
            if (skip(node, name, index)) continue;
            if (plugin) logger().verbose(fmt::format("Stripping initializer {} to the {} op.", name, node.op_type()));
            selected_.insert(name);
        }
    }

    bool skip(const onnx::NodeProto& node, const std::string& name, int index) const {
        if (const auto allowed = kStrippableInputs.find(node.op_type());
            allowed != kStrippableInputs.end() && !allowed->second.contains(index))
            return true;
        const auto initializer = initializers_.find(name);
        if (initializer == initializers_.end()) return true;
        if (initializer->second->data_type() == onnx::TensorProto::UINT8 || exclude_.contains(name)) return true;
        if (const auto threshold = kSizeThresholds.find(node.op_type()); threshold != kSizeThresholds.end()) {
            int64_t numel = 1;
            for (int64_t dim : initializer->second->dims()) numel *= dim;
            if (numel < threshold->second) return true;
        }
        return false;
    }

    const onnx::GraphProto& graph_;
    const std::set<std::string>& exclude_;
    std::unordered_map<std::string, const onnx::TensorProto*> initializers_;
    std::set<std::string> graph_outputs_;
    std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> consumers_;
    std::set<std::string> selected_;
};

// Keeps name, dims, type and doc_string; drops the values wherever they are stored.
void clear_data(onnx::TensorProto& tensor) {
    tensor.clear_raw_data();
    tensor.clear_float_data();
    tensor.clear_int32_data();
    tensor.clear_int64_data();
    tensor.clear_double_data();
    tensor.clear_uint64_data();
    tensor.clear_string_data();
    tensor.clear_external_data();
    tensor.clear_data_location();
}

bool holds_data(const onnx::TensorProto& tensor) {
    return !tensor.raw_data().empty() || tensor.float_data_size() || tensor.int32_data_size() ||
           tensor.int64_data_size() || tensor.double_data_size() || tensor.uint64_data_size() ||
           tensor.string_data_size() || tensor.external_data_size();
}

}  // namespace

std::vector<std::string> find_strippable_weights(const onnx::ModelProto& model, const std::set<std::string>& exclude) {
    const std::set<std::string> selected = PatternMatcher(model.graph(), exclude).run();
    std::vector<std::string> names;
    for (const auto& initializer : model.graph().initializer())
        if (selected.contains(initializer.name()) &&
            std::find(names.begin(), names.end(), initializer.name()) == names.end())
            names.push_back(initializer.name());
    return names;
}

std::size_t strip_weights(onnx::ModelProto& model, const std::set<std::string>& exclude) {
    logger().start("Beginning weight stripping...");
    logger().warning(
        "The model is expected to be constant folded to successfully capture all weights eligible for "
        "stripping");
    logger().info("Querying Sparse Initializers in the model");
    const std::set<std::string> sparse = check_sparsity(model);
    const std::vector<std::string> names = find_strippable_weights(model, exclude);
    const std::set<std::string> to_strip(names.begin(), names.end());

    std::size_t stripped = 0;
    std::set<std::string> initializer_names;
    for (auto& initializer : *model.mutable_graph()->mutable_initializer()) {
        initializer_names.insert(initializer.name());
        if (!to_strip.contains(initializer.name())) continue;
        logger().verbose("Stripping initializer " + initializer.name());
        clear_data(initializer);
        initializer.set_doc_string(std::string(kWeightlessMarker) + "/" +
                                   (sparse.contains(initializer.name()) ? kSparseMarker : ""));
        ++stripped;
    }
    std::vector<std::string> unknown;
    for (const auto& name : exclude)
        if (!initializer_names.contains(name)) unknown.push_back(python_repr(name));  // a Python set's items
    if (!unknown.empty())
        logger().warning(
            fmt::format("The following weights provided by the user to skip stripping were not found in "
                        "the model: {{{}}}.",
                        fmt::join(unknown, ", ")));
    if (stripped)
        model.set_doc_string(model.doc_string().empty() ? kWeightlessMarker
                                                        : model.doc_string() + "-" + kWeightlessMarker);
    logger().finish(fmt::format("Finished stripping {} weights", stripped));
    return stripped;
}

std::size_t reconstruct_weights(onnx::ModelProto& model, uint64_t seed) {
    logger().start("Beginning weight reconstruction...");
    std::mt19937_64 generator(seed);
    std::normal_distribution<double> normal;
    std::set<std::string> skip_pruning;
    // Values are made for every marked initializer before any is written, so an error leaves the model as it was.
    std::vector<std::pair<onnx::TensorProto*, std::string>> filled;
    for (auto& initializer : *model.mutable_graph()->mutable_initializer()) {
        const std::string& doc = initializer.doc_string();
        if (doc.find(kWeightlessMarker) == std::string::npos) {
            skip_pruning.insert(initializer.name());
            continue;
        }
        const std::string weightless = std::string(kWeightlessMarker) + "/";
        if (doc != weightless && doc != weightless + kSparseMarker)
            throw FormatError(
                fmt::format("Initializer '{}' has the doc_string '{}', which is not one weight-strip "
                            "writes\nNote: Expected '{}' or '{}{}'",
                            initializer.name(), doc, weightless, weightless, kSparseMarker));
        if (holds_data(initializer))
            throw FormatError(fmt::format("Initializer '{}' is marked {} but still holds data", initializer.name(),
                                          kWeightlessMarker));
        if (doc == weightless) skip_pruning.insert(initializer.name());
        Shape shape(initializer.dims().begin(), initializer.dims().end());
        Tensor values(DataType::kFloat64, shape);
        for (int64_t i = 0; i < values.numel(); ++i) values.data_as<double>()[i] = normal(generator);
        const Tensor typed = values.cast(dtype_from_onnx(initializer.data_type()));
        filled.emplace_back(&initializer, tensor_to_proto(typed, initializer.name()).raw_data());
    }
    for (auto& [initializer, raw] : filled) {
        logger().verbose(fmt::format("Reconstructing weights for the {} initializer", initializer->name()));
        initializer->clear_data_location();
        initializer->set_raw_data(std::move(raw));
    }
    logger().info("Calling Sparsity Pruner to prune selected weights");
    prune_model_2_4(model, skip_pruning);
    logger().finish(fmt::format("Finished reconstructing {} weights", filled.size()));
    return filled.size();
}

}  // namespace polygraphy
