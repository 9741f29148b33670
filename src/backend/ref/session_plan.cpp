// Session planning: execution order and buffer lifetimes of a prepared graph.
#include <algorithm>

#include "backend/onnx/domain.h"
#include "backend/ref/session_impl.h"
#include "common/toposort.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::ref {

void Session::Impl::plan_buffer_lifetimes() {
    // Release points: after its last consumer, or right away when nothing consumes it.
    std::unordered_set<int> kept;
    for (const auto& output : outputs) kept.insert(output.second);
    std::vector<int> last_use(slot_names.size(), -1);
    for (std::size_t s = 0; s < steps.size(); ++s) {
        for (int input : steps[s].inputs)
            if (input >= 0) last_use[input] = static_cast<int>(s);
        for (int output : steps[s].outputs)
            if (output >= 0) last_use[output] = std::max(last_use[output], static_cast<int>(s));
    }
    for (std::size_t s = 0; s < steps.size(); ++s)
        for (int output : steps[s].outputs)
            if (output >= 0 && !kept.contains(output) &&
                std::find(steps[last_use[output]].release.begin(), steps[last_use[output]].release.end(), output) ==
                    steps[last_use[output]].release.end())
                steps[last_use[output]].release.push_back(output);
    if (arena) plan_concats_in_place(kept);
    for (Step& step : steps) {
        const std::size_t declared = step.info->proto().input_size();
        step.donatable.assign(std::min(declared, step.inputs.size()), false);
        for (std::size_t i = 0; i < step.donatable.size(); ++i) {
            const int slot = step.inputs[i];
            step.donatable[i] = slot >= 0 && std::count(step.inputs.begin(), step.inputs.end(), slot) == 1 &&
                                std::find(step.release.begin(), step.release.end(), slot) != step.release.end();
        }
    }
}

namespace {

/// The convolutions, whose kernels write their float32 output into a buffer offered to them.
bool writes_offered_output(const onnx::NodeProto& node) {
    const std::string_view domain = canonical_domain(node.domain());
    return node.op_type() == (domain.empty() ? "Conv" : "FusedConv") &&
           (domain.empty() || domain == kRuntimeDomain || domain == kMicrosoftDomain);
}

}  // namespace

void Session::Impl::plan_concats_in_place(const std::unordered_set<int>& graph_outputs) {
    std::vector<int> readers(slot_names.size(), 0);
    std::vector<std::pair<int, std::size_t>> producer(slot_names.size(), {-1, 0});  // step, output
    for (std::size_t s = 0; s < steps.size(); ++s) {
        for (int input : steps[s].inputs)
            if (input >= 0) ++readers[input];
        for (std::size_t j = 0; j < steps[s].outputs.size(); ++j)
            if (steps[s].outputs[j] >= 0) producer[steps[s].outputs[j]] = {static_cast<int>(s), j};
    }
    for (std::size_t c = 0; c < steps.size(); ++c) {
        const Step& concat = steps[c];
        const onnx::NodeProto& node = concat.info->proto();
        if (!is_default_domain(node.domain()) || node.op_type() != "Concat" || node.input_size() < 2) continue;
        bool eligible = true;
        for (int input : concat.inputs) {
            const int p = input >= 0 ? producer[input].first : -1;
            eligible = eligible && p >= 0 && readers[input] == 1 && !graph_outputs.contains(input) &&
                       !constants[input].defined() && producer[input].second == 0 &&
                       writes_offered_output(steps[p].info->proto());
        }
        if (!eligible) continue;
        const int entry = static_cast<int>(concats_in_place.size());
        concats_in_place.push_back(std::make_unique<ConcatInPlace>());
        concats_in_place.back()->axis = concat.info->attr_int("axis", 1);
        steps[c].concat_in_place = entry;
        for (std::size_t i = 0; i < concat.inputs.size(); ++i) {
            Step& p = steps[producer[concat.inputs[i]].first];
            p.feeds_concat = entry;
            p.concat_input = i;
        }
    }
    if (!concats_in_place.empty())
        logger().extra_verbose(fmt::format("{} Concat nodes take their inputs in place", concats_in_place.size()));
}

std::vector<std::size_t> Session::Impl::topological_order(const std::unordered_set<std::string>& graph_values) {
    const std::size_t count = nodes.size();
    std::unordered_map<std::string, std::size_t> producer;
    for (std::size_t i = 0; i < count; ++i) {
        for (const auto& output : nodes[i].output()) {
            if (output.empty()) continue;
            if (graph_values.contains(output))
                throw ModelError(fmt::format("Node '{}' ({}): output '{}' has the name of a graph input or initializer",
                                             display_names[i], nodes[i].op_type(), output));
            auto [found, inserted] = producer.emplace(output, i);
            if (!inserted)
                throw ModelError(fmt::format("Tensor '{}' is produced by both node '{}' and node '{}'", output,
                                             display_names[found->second], display_names[i]));
        }
    }

    std::vector<std::vector<std::size_t>> predecessors(count);
    for (std::size_t i = 0; i < count; ++i) {
        for (const auto& input : node_inputs[i]) {
            if (input.empty()) continue;
            auto found = producer.find(input);
            if (found == producer.end()) {
                if (graph_values.contains(input)) continue;
                throw ModelError(
                    fmt::format("Node '{}' ({}): input '{}' is not produced by any node, graph input or initializer",
                                display_names[i], nodes[i].op_type(), input));
            }
            predecessors[i].push_back(found->second);
        }
    }
    return stable_topological_order(predecessors, [this](std::size_t index) { return display_names[index]; });
}
}  // namespace polygraphy::ref
