#include "polygraphy/comparator/error_profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "common/toposort.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/comparator/divergence.h"

namespace polygraphy {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double machine_epsilon(DataType dtype) {
    switch (dtype) {
        case DataType::kFloat64:
            return 2.220446049250313e-16;
        case DataType::kFloat16:
            return 0.0009765625;
        case DataType::kBFloat16:
            return 0.0078125;
        case DataType::kFloat8E4M3FN:
        case DataType::kFloat8E4M3FNUZ:
            return 0.125;
        case DataType::kFloat8E5M2:
        case DataType::kFloat8E5M2FNUZ:
            return 0.25;
        default:
            return 1.1920928955078125e-07;  // float32, and the default for other types
    }
}

// NaN for outputs that could not be compared; an error made of NaNs counts as infinitely large.
double error_level_of(const OutputCompareResult& result) {
    if (!result.error.empty()) return std::numeric_limits<double>::quiet_NaN();
    double level = result.mean_absdiff;
    if (result.distributions) {
        const double magnitude = result.distributions->second_mean_magnitude;
        level = magnitude > 0 ? level / magnitude : (level == 0 ? 0.0 : kInfinity);
    }
    return std::isnan(level) ? kInfinity : level;
}

double growth_between(double level, double upstream, double floor) {
    if (std::isnan(level)) return 0;
    const double to = std::max(level, floor), from = std::max(upstream, floor);
    if (std::isinf(to) && std::isinf(from)) return 0;
    return std::log10(to) - std::log10(from);
}

ProfileEntry make_entry(const std::string& tensor, const OutputCompareResult& result) {
    ProfileEntry entry;
    entry.tensor = tensor;
    entry.result = result;
    entry.error_level = error_level_of(result);
    return entry;
}

// Entries in the graph's topological order, with growth over the error reaching each node's inputs.
std::vector<ProfileEntry> graph_entries(const onnx::GraphProto& graph, const IterationCompareResult& compared) {
    const int node_count = graph.node_size();
    std::unordered_map<std::string, std::size_t> producer;
    for (int index = 0; index < node_count; ++index)
        for (const std::string& output : graph.node(index).output())
            if (!output.empty()) producer.emplace(output, static_cast<std::size_t>(index));
    std::vector<std::vector<std::size_t>> predecessors(static_cast<std::size_t>(node_count));
    for (int index = 0; index < node_count; ++index)
        for (const std::string& input : graph.node(index).input()) {
            const auto found = producer.find(input);
            if (found != producer.end() && found->second != static_cast<std::size_t>(index))
                predecessors[static_cast<std::size_t>(index)].push_back(found->second);
        }
    std::vector<std::size_t> order(static_cast<std::size_t>(node_count));
    std::iota(order.begin(), order.end(), 0);
    try {
        order = stable_topological_order(predecessors,
                                         [&](std::size_t i) { return graph.node(static_cast<int>(i)).name(); });
    } catch (const PolygraphyException&) {
        // A cycle: keep the file's order; the profile is still worth drawing.
    }

    std::vector<ProfileEntry> entries;
    std::unordered_set<std::string> placed;
    std::unordered_map<std::string, double> upstream;  // error level reaching each tensor
    // Compared tensors that no node produces (graph inputs) come first; they start their own paths.
    for (const auto& [name, result] : compared) {
        if (producer.count(name)) continue;
        bool in_graph = false;
        for (const auto& input : graph.input()) in_graph = in_graph || input.name() == name;
        if (!in_graph) continue;
        entries.push_back(make_entry(name, result));
        upstream[name] = entries.back().error_level;
        placed.insert(name);
    }
    for (const std::size_t index : order) {
        const onnx::NodeProto& node = graph.node(static_cast<int>(index));
        double reaching = 0;
        for (const std::string& input : node.input()) {
            const auto found = upstream.find(input);
            if (found != upstream.end() && !std::isnan(found->second)) reaching = std::max(reaching, found->second);
        }
        for (const std::string& output : node.output()) {
            if (output.empty()) continue;
            const OutputCompareResult* result = compared.find(output);
            if (!result || placed.count(output)) {
                upstream[output] = reaching;
                continue;
            }
            ProfileEntry entry = make_entry(output, *result);
            entry.node_index = static_cast<int64_t>(index);
            entry.node = node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
            entry.op_type = node.op_type();
            entry.growth = growth_between(entry.error_level, reaching, error_floor(*result));
            upstream[output] = std::isnan(entry.error_level) ? reaching : entry.error_level;
            placed.insert(output);
            entries.push_back(std::move(entry));
        }
    }
    for (const auto& [name, result] : compared)
        if (!placed.count(name)) entries.push_back(make_entry(name, result));
    return entries;
}

// Without a graph: comparison order, each entry's input being the previous one.
std::vector<ProfileEntry> sequence_entries(const IterationCompareResult& compared) {
    std::vector<ProfileEntry> entries;
    double previous = 0;
    for (const auto& [name, result] : compared) {
        ProfileEntry entry = make_entry(name, result);
        entry.growth = growth_between(entry.error_level, previous, error_floor(result));
        if (!std::isnan(entry.error_level)) previous = entry.error_level;
        entries.push_back(std::move(entry));
    }
    return entries;
}

void mark_fastest_growing(ErrorProfile& profile) {
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < profile.entries.size(); ++i)
        if (profile.entries[i].growth >= kMinimumGrowthDecades) candidates.push_back(i);
    std::stable_sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
        return profile.entries[a].growth > profile.entries[b].growth;
    });
    if (candidates.size() > kFastestGrowingCount) candidates.resize(kFastestGrowingCount);
    for (std::size_t rank = 0; rank < candidates.size(); ++rank)
        profile.entries[candidates[rank]].fastest_growing_rank = static_cast<int>(rank + 1);
    profile.fastest_growing = std::move(candidates);
}

}  // namespace

double error_floor(const OutputCompareResult& result) {
    if (!result.distributions) return 1e-7;
    auto epsilon = [](DataType dtype) {
        return dtype_is_floating(dtype) ? machine_epsilon(dtype) : machine_epsilon(DataType::kFloat32);
    };
    return std::max(epsilon(result.distributions->first_dtype), epsilon(result.distributions->second_dtype));
}

std::vector<ErrorProfile> build_error_profiles(const AccuracyResult& accuracy, const onnx::GraphProto* graph) {
    std::vector<ErrorProfile> profiles;
    for (const auto& pair : accuracy.pairs) {
        for (std::size_t iteration = 0; iteration < pair.iterations.size(); ++iteration) {
            const IterationCompareResult& compared = pair.iterations[iteration];
            ErrorProfile profile;
            profile.first_runner = pair.first_runner;
            profile.second_runner = pair.second_runner;
            profile.iteration = iteration;
            profile.entries = graph ? graph_entries(*graph, compared) : sequence_entries(compared);

            std::optional<std::string> diverged;
            if (graph) {
                if (const auto divergence = find_first_divergence(*graph, compared)) diverged = divergence->tensor;
            } else {
                for (const auto& entry : profile.entries)
                    if (!entry.result.passed) {
                        diverged = entry.tensor;
                        break;
                    }
            }
            for (std::size_t i = 0; i < profile.entries.size() && diverged; ++i)
                if (profile.entries[i].tensor == *diverged) {
                    profile.entries[i].first_divergence = true;
                    profile.first_divergence = i;
                    break;
                }
            mark_fastest_growing(profile);
            profiles.push_back(std::move(profile));
        }
    }
    return profiles;
}

}  // namespace polygraphy
