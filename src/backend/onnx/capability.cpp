#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnx/functions.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "backend/onnx/domain.h"
#include "backend/onnx/graph_internal.h"
#include "backend/onnx/messages.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnx/node_check.h"
#include "polygraphy/backend/onnx/partition.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace {

std::string python_list(const std::vector<std::pair<int, int>>& ranges) {
    std::string out = "[";
    for (std::size_t i = 0; i < ranges.size(); ++i)
        out += (i ? ", [" : "[") + std::to_string(ranges[i].first) + ", " + std::to_string(ranges[i].second) + "]";
    return out + "]";
}

std::string pad(const std::string& text, std::size_t width, bool right = false) {
    if (text.size() >= width) return text;
    return right ? std::string(width - text.size(), ' ') + text : text + std::string(width - text.size(), ' ');
}

// Nodes with the same op, attributes, input types and small constant inputs get the same verdict:
// the key that decides whether a checker must be asked again (sessions are slow to build).
std::string verdict_key(const onnx::ModelProto& single, const onnx::NodeProto& node) {
    std::string key;
    auto field = [&key](char tag, const std::string& value) {
        key += '\x1f';
        key += tag;
        key += std::to_string(value.size());
        key += ':';
        key += value;
    };
    field('D', node.domain());
    field('O', node.op_type());
    field('N', std::to_string(node.input_size()) + ':' + std::to_string(node.output_size()));
    for (const auto& attr : node.attribute()) field('A', attr.SerializeAsString());
    for (const auto& input : single.graph().input()) field('T', input.type().SerializeAsString());
    for (const auto& init : single.graph().initializer()) {
        onnx::TensorProto unnamed = init;
        unnamed.clear_name();
        if (unnamed.ByteSizeLong() <= 1024) {
            field('C', unnamed.SerializeAsString());
        } else {
            std::string shape = std::to_string(init.data_type());
            for (int64_t dim : init.dims()) {
                shape += ',';
                shape += std::to_string(dim);
            }
            field('W', shape);
        }
    }
    return key;
}

}  // namespace

NodeChecker evaluator_node_checker(const GraphEvaluator& evaluator) {
    return [&evaluator](const onnx::ModelProto& model, const onnx::NodeProto& node) -> NodeVerdict {
        const int64_t opset = opset_of_domain(model, node.domain());
        // A call to a local function is as supported as its body, which prepare() runs below.
        if (!calls_local_functions(model) && !evaluator.supports(node.domain(), node.op_type(), opset))
            return {false, capitalized(evaluator.name()) + " has no kernel for " + node.op_type() + " (domain '" +
                               display_domain(node.domain()) + "', opset " + std::to_string(opset) + ")"};
        try {
            evaluator.prepare(model, {}, 0);
        } catch (const std::exception& error) {
            return {false, failure_reason(error.what())};
        }
        return {};
    };
}

void infer_value_info(onnx::ModelProto& model) {
    check_nodes(model);  // libonnx's inference functions crash on malformed nodes
    if (!libonnx_inference_is_safe(model)) {
        logger().verbose("Shape inference skipped: a node reads a tensor that is not defined before it");
        return;
    }
    try {
        run_libonnx_inference(model, /*data_propagation=*/false);
    } catch (const std::exception& error) {
        logger().verbose(std::string("Shape inference stopped early: ") + error.what());
    }
}

bool CapabilityReport::fully_supported() const {
    return std::all_of(nodes.begin(), nodes.end(), [](const NodeVerdict& verdict) { return verdict.supported; });
}

std::string CapabilityReport::summary() const {
    // op -> reason -> node ranges, in first-seen order.
    std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::vector<std::pair<int, int>>>>>> table;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].supported) continue;
        const std::string& op = op_types[i];
        auto op_entry = std::find_if(table.begin(), table.end(), [&](const auto& entry) { return entry.first == op; });
        if (op_entry == table.end()) op_entry = table.insert(table.end(), {op, {}});
        auto& reasons = op_entry->second;
        const std::string reason = nodes[i].reason.empty() ? "UNKNOWN ERROR" : nodes[i].reason;
        auto reason_entry =
            std::find_if(reasons.begin(), reasons.end(), [&](const auto& entry) { return entry.first == reason; });
        if (reason_entry == reasons.end()) reason_entry = reasons.insert(reasons.end(), {reason, {}});
        reason_entry->second.emplace_back(static_cast<int>(i), static_cast<int>(i) + 1);
    }
    std::size_t op_width = std::string("Operator ").size(), reason_width = 0;
    for (const auto& [op, reasons] : table) {
        op_width = std::max(op_width, op.size());
        for (const auto& [reason, ranges] : reasons) reason_width = std::max(reason_width, reason.size());
    }
    std::string out = "===== Summary =====\n";
    const std::string header =
        pad("Operator", op_width) + "| " + pad("Count", 7) + " | " + pad("Reason", reason_width) + " | Nodes\n";
    out += header + std::string(header.size(), '-') + "\n";
    for (const auto& [op, reasons] : table)
        for (const auto& [reason, ranges] : reasons)
            out += pad(op, op_width) + "| " + pad(std::to_string(ranges.size()), 7, true) + " | " +
                   pad(reason, reason_width) + " | " + python_list(ranges) + "\n";
    return out;
}

CapabilityReport check_capability(const onnx::ModelProto& model, const NodeChecker& checker,
                                  const std::string& backend) {
    CapabilityReport report;
    report.backend = backend;
    const NodeSubsetExtractor extractor(model);
    const auto& graph = model.graph();
    std::map<std::string, NodeVerdict> verdicts;
    for (int index = 0; index < graph.node_size(); ++index) {
        const auto& node = graph.node(index);
        const std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
        const onnx::ModelProto single = extractor.extract({index}, name);
        const std::string key = verdict_key(single, node);
        auto cached = verdicts.find(key);
        if (cached == verdicts.end()) cached = verdicts.emplace(key, checker(single, node)).first;
        NodeVerdict verdict = cached->second;
        logger().verbose("Node " + std::to_string(index) + " | " + name + " [Op: " + node.op_type() + "]: " +
                         (verdict.supported ? "supported" : "unsupported: " + verdict.reason));
        report.nodes.push_back(std::move(verdict));
        report.op_types.push_back(node.op_type());
    }
    for (int index = 0; index < graph.node_size(); ++index) {
        const bool supported = report.nodes[static_cast<std::size_t>(index)].supported;
        if (report.partitions.empty() || report.partitions.back().supported != supported)
            report.partitions.push_back({supported, index, index + 1});
        else
            report.partitions.back().end = index + 1;
    }
    return report;
}

void save_capability_results(const onnx::ModelProto& model, const CapabilityReport& report, const std::string& dir) {
    std::error_code error;
    if (std::filesystem::exists(dir, error) && !std::filesystem::is_directory(dir, error))
        throw PolygraphyException("Cannot save capability results to '" + dir + "': it is not a folder");
    const NodeSubsetExtractor extractor(model);
    for (const auto& partition : report.partitions) {
        std::vector<int> indices;
        for (int i = partition.begin; i < partition.end; ++i) indices.push_back(i);
        const std::string stem = std::string(partition.supported ? "supported" : "unsupported") + "_subgraph-nodes-" +
                                 std::to_string(partition.begin) + "-" + std::to_string(partition.end - 1);
        save_onnx(extractor.extract(indices, stem), (std::filesystem::path(dir) / (stem + ".onnx")).string());
    }
    const std::string results = (std::filesystem::path(dir) / "results.txt").string();
    logger().info("Saving results to " + results);
    write_file_atomically(results, report.summary());
}

}  // namespace polygraphy
