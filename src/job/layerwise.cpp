// Layer-wise runs in bounded memory: the outputs of a `mark all` run, compared slice by slice.
//
// ONNX-Runtime hands back every marked output of a run at once, so comparing each layer as soon as
// it is produced cannot bound its memory. Instead the graph is cut into slices of nodes (in
// topological order, slices.h): each runner runs each slice as a model of its own, fed with the
// graph inputs and with the "cut" tensors its own earlier slices produced, so that every node runs
// once. Each slice's outputs are compared and freed before the next slice runs; only the cut
// tensors are kept in between.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "backend/onnx/structure_unlogged.h"
#include "job/job_internal.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/slices.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npz.h"

namespace polygraphy {

std::size_t default_session_memory_budget() {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return std::size_t{4} << 30;
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size) / 4;
}

}  // namespace polygraphy

namespace polygraphy::job_detail {

std::string size_text(std::size_t bytes) {
    const double value = static_cast<double>(bytes);
    if (bytes >= (std::size_t{1} << 30)) return fmt::format("{:.2f} GiB", value / (1 << 30));
    if (bytes >= (std::size_t{1} << 20)) return fmt::format("{:.1f} MiB", value / (1 << 20));
    return fmt::format("{:.1f} KiB", value / (1 << 10));
}

std::unordered_map<std::string, std::size_t> initializer_bytes(const onnx::GraphProto& graph) {
    std::unordered_map<std::string, std::size_t> sizes;
    for (const auto& initializer : graph.initializer()) {
        if (initializer.data_type() == onnx::TensorProto::STRING ||
            initializer.data_type() == onnx::TensorProto::UNDEFINED)
            continue;
        std::size_t count = 1;
        for (int64_t dim : initializer.dims()) count *= static_cast<std::size_t>(std::max<int64_t>(dim, 0));
        sizes[initializer.name()] = count * dtype_size(dtype_from_onnx(initializer.data_type()));
    }
    return sizes;
}

std::size_t weight_bytes(const onnx::ModelProto& model) {
    std::size_t total = 0;
    for (const auto& [name, bytes] : initializer_bytes(model.graph())) total += bytes;
    return total;
}

std::unordered_map<std::string, std::size_t> tensor_bytes(onnx::ModelProto& model, const TensorMap& feed) {
    OrderedMap<Shape> input_shapes;
    for (const auto& [name, tensor] : feed) input_shapes.set(name, tensor.shape());
    // infer_output_metadata() tells the graph outputs' sizes: every tensor is made one for a moment.
    onnx::GraphProto& graph = *model.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> outputs;
    outputs.Swap(graph.mutable_output());
    struct RestoreOutputs {
        onnx::GraphProto& graph;
        google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& outputs;
        ~RestoreOutputs() { graph.mutable_output()->Swap(&outputs); }
    } restore{graph, outputs};
    std::unordered_set<std::string> named;
    for (const auto& output : outputs)
        if (named.insert(output.name()).second) *graph.add_output() = output;
    for (const auto& node : graph.node())
        for (const auto& name : node.output())
            if (!name.empty() && named.insert(name).second) graph.add_output()->set_name(name);

    std::unordered_map<std::string, std::size_t> bytes;
    for (const auto& [name, entry] : infer_output_metadata(model, input_shapes)) {
        const bool known =
            entry.dtype && *entry.dtype != DataType::kString && entry.shape &&
            std::none_of(entry.shape->begin(), entry.shape->end(), [](const Dim& dim) { return dim.is_dynamic(); });
        if (!known) continue;
        std::size_t count = 1;
        for (const Dim& dim : *entry.shape) count *= static_cast<std::size_t>(dim.value);
        bytes.emplace(name, count * dtype_size(*entry.dtype));
    }
    return bytes;
}

namespace {

// The node (by name, else its first output) that a slice of one node runs.
std::string layer_name(const onnx::GraphProto& graph, const GraphSlice& slice) {
    const onnx::NodeProto& node = graph.node(static_cast<int>(slice.nodes.front()));
    const std::string name = !node.name().empty() ? node.name() : node.output_size() ? node.output(0) : "";
    return fmt::format("'{}' ({})", name, node.op_type());
}

}  // namespace

std::unordered_map<std::string, onnx::ValueInfoProto> cut_input_types(const GraphSlice& slice,
                                                                      const std::vector<std::vector<TensorMap>>& kept) {
    std::unordered_map<std::string, onnx::ValueInfoProto> types;
    for (const auto& name : slice.cut_inputs) {
        const Tensor& first = kept.front().front().at(name);
        onnx::ValueInfoProto info;
        info.set_name(name);
        auto& tensor_type = *info.mutable_type()->mutable_tensor_type();
        tensor_type.set_elem_type(dtype_to_onnx(first.dtype()));
        auto& shape = *tensor_type.mutable_shape();
        for (std::size_t axis = 0; axis < first.shape().size(); ++axis) {
            bool agreed = true;
            for (const auto& runner : kept)
                for (const TensorMap& iteration : runner) {
                    const Shape& other = iteration.at(name).shape();
                    agreed = agreed && other.size() == first.shape().size() && other[axis] == first.shape()[axis];
                }
            auto& dim = *shape.add_dim();
            if (agreed) dim.set_dim_value(first.shape()[axis]);
        }
        types.emplace(name, std::move(info));
    }
    return types;
}

std::size_t estimate_unknown_sizes(const onnx::GraphProto& graph, const TensorMap& feed,
                                   std::unordered_map<std::string, std::size_t>& bytes) {
    std::unordered_map<std::string, std::size_t> sizes = bytes;
    for (const auto& [name, tensor] : feed) sizes.emplace(name, tensor.nbytes());
    std::size_t estimated = 0;
    for (const auto& node : graph.node()) {
        std::optional<std::size_t> largest_input;
        for (const auto& input : node.input())
            if (auto found = sizes.find(input); found != sizes.end())
                largest_input = std::max(largest_input.value_or(0), found->second);
        if (!largest_input) continue;
        for (const auto& output : node.output())
            if (!output.empty() && sizes.emplace(output, *largest_input).second) {
                bytes.emplace(output, *largest_input);
                ++estimated;
            }
    }
    return estimated;
}

// Whether the job may run in slices because its model is larger than an ONNX-Runtime session: an
// ONNX-Runtime runner among two or more, and results neither saved to JSON nor loaded.
bool may_split_sessions(const RunJob& job) {
    const bool saves_json = job.save_outputs_path && !npz::is_npz_path(*job.save_outputs_path);
    if (!job.model || job.runners.size() < 2 || saves_json || !job.load_outputs_paths.empty()) return false;
    return std::any_of(job.runners.begin(), job.runners.end(),
                       [](const RunnerStep& step) { return std::holds_alternative<OnnxrtRunnerStep>(step); });
}

std::optional<std::size_t> session_split_budget(const RunJob& job) {
    if (!may_split_sessions(job)) return std::nullopt;
    const std::size_t budget = job.compare.session_memory_budget.value_or(default_session_memory_budget());
    if (weight_bytes(*onnx_structure_from_path_unlogged(job.model->path)) <= budget) return std::nullopt;
    return budget;
}

bool may_run_in_slices(const RunJob& job) {
    // Saved outputs stream into an .npz slice by slice; Polygraphy's JSON nests every output of an
    // iteration in one object, so saving it needs the whole run's outputs at once.
    const bool saves_json = job.save_outputs_path && !npz::is_npz_path(*job.save_outputs_path);
    if (!job.model || job.runners.size() < 2 || saves_json || !job.load_outputs_paths.empty()) return false;
    return std::any_of(job.model->steps.begin(), job.model->steps.end(),
                       [](const ModelStep& step) { return std::holds_alternative<ModifyOutputsStep>(step); });
}

std::vector<GraphSlice> plan_model_slices(const onnx::GraphProto& graph,
                                          const std::unordered_map<std::string, std::size_t>& bytes, std::size_t copies,
                                          std::size_t budget, bool budget_given,
                                          std::optional<std::size_t> session_budget) {
    std::vector<std::string> marked;
    for (const auto& output : graph.output()) marked.push_back(output.name());
    std::vector<GraphSlice> slices = session_budget ? plan_graph_slices(graph, marked, bytes, budget / copies,
                                                                        initializer_bytes(graph), *session_budget)
                                                    : plan_graph_slices(graph, marked, bytes, budget / copies);
    const auto largest = std::max_element(slices.begin(), slices.end(),
                                          [](const GraphSlice& a, const GraphSlice& b) { return a.bytes < b.bytes; });
    if (largest == slices.end() || largest->bytes * copies <= budget) return slices;
    if (budget_given)
        throw UsageError(
            fmt::format("The compare memory budget of {} is too small for one layer: node {} needs {} per runner and "
                        "iteration with the tensors kept for later layers, {} for the {} copies a comparison holds "
                        "(--compare-memory-budget)",
                        size_text(budget), layer_name(graph, *largest), size_text(largest->bytes),
                        size_text(largest->bytes * copies), copies));
    // The default budget grows to what the largest layer needs: no slice can hold less.
    const std::size_t needed = largest->bytes * copies;
    logger().info(fmt::format("The default compare memory budget of {} is raised to {}: node {} needs that much",
                              size_text(budget), size_text(needed), layer_name(graph, *largest)));
    return plan_graph_slices(graph, marked, bytes, largest->bytes);
}

std::optional<SlicePlan> plan_layerwise_run(const RunJob& job, const OnnxLoader& model,
                                            std::shared_ptr<DatasetTally> tally) {
    // A model larger than an ONNX-Runtime session runs in slices even when only its outputs are
    // compared; its weights are read from the file's structure, without loading the model.
    const std::optional<std::size_t> session_budget = session_split_budget(job);
    if (!may_run_in_slices(job) && !session_budget) return std::nullopt;
    const OnnxModel loaded = model();
    SlicePlan plan;
    const DataLoaderFn data_loader = build_data_loader(job.data_loader, std::move(tally));
    const TensorMetadata inputs = get_onnx_input_metadata(loaded->graph());
    while (std::optional<TensorMap> feed = data_loader(plan.feeds.size(), inputs))
        plan.feeds.push_back(std::move(*feed));
    if (plan.feeds.empty()) return std::nullopt;

    std::unordered_map<std::string, std::size_t> bytes = tensor_bytes(*loaded, plan.feeds.front());
    if (bytes.empty()) {
        logger().warning(
            "The sizes of the outputs are unknown (shape inference could not tell them): comparing them "
            "all at once, whatever the compare memory budget");
        return std::nullopt;
    }
    const std::size_t estimated = estimate_unknown_sizes(loaded->graph(), plan.feeds.front(), bytes);
    std::size_t tensors = 0, unknown = 0, largest = 0;
    for (const auto& [name, size] : bytes) largest = std::max(largest, size);
    for (const auto& node : loaded->graph().node())
        for (const auto& name : node.output())
            if (!name.empty()) {
                ++tensors;
                unknown += bytes.contains(name) ? 0 : 1;
            }
    if (estimated || unknown)
        logger().verbose(
            fmt::format("Shape inference could not tell the sizes of {} of the {} tensors: {} are "
                        "estimated from their inputs, {} count as the largest one, {}",
                        estimated + unknown, tensors, estimated, unknown, size_text(largest)));
    // Every runner's outputs for every iteration, plus the runtime's own copy of the slice it produces.
    const std::size_t copies = job.runners.size() * plan.feeds.size() + 1;
    const std::size_t budget =
        job.compare.memory_budget.value_or(std::max(kDefaultCompareMemoryBudget, weight_bytes(*loaded)));
    plan.slices = plan_model_slices(loaded->graph(), bytes, copies, budget, job.compare.memory_budget.has_value(),
                                    session_budget);
    if (plan.slices.size() < 2) return std::nullopt;
    if (session_budget) {
        logger().info(fmt::format(
            "The model's weights ({}) exceed the session memory budget of {}: running in {} slices, each a session "
            "of its own (--session-memory-budget)",
            size_text(weight_bytes(*loaded)), size_text(*session_budget), plan.slices.size()));
        plan.session_budget = session_budget;
        return plan;
    }
    std::size_t effective_budget = budget;  // a default one may have grown
    for (const auto& slice : plan.slices) effective_budget = std::max(effective_budget, slice.bytes * copies);
    std::size_t total = 0;
    for (const auto& output : loaded->graph().output())
        if (auto found = bytes.find(output.name()); found != bytes.end()) total += found->second;
    logger().info(
        fmt::format("Layer-wise comparison in {} slices: {} outputs take about {} per runner and iteration, "
                    "over the compare memory budget of {}; each slice runs its own nodes, fed by the runner's "
                    "previous slices",
                    plan.slices.size(), loaded->graph().output_size(), size_text(total), size_text(effective_budget)));
    return plan;
}

SlicedRun run_in_slices(const RunJob& job, const std::vector<std::unique_ptr<BaseRunner>>& runners,
                        onnx::ModelProto& model, const SlicePlan& plan, const SliceOutputSink& sink) {
    // The whole graph is put back for what reads the model afterwards (divergence search, report).
    SliceView view(model);
    SlicedComparison comparison(build_compare_func(job.compare), job.compare.fail_fast);
    SlicedRun run;
    Comparator::RunOptions options = job.inference;
    std::size_t total_outputs = 0, done_outputs = 0;
    for (const auto& slice : plan.slices) total_outputs += slice.marked.size();
    // The cut tensors each runner produced, by iteration: its own, so that each runner computes
    // exactly what one whole run of it would.
    std::vector<std::vector<TensorMap>> kept(runners.size(), std::vector<TensorMap>(plan.feeds.size()));
    const std::size_t count = plan.slices.size();
    struct ClearProgress {
        ~ClearProgress() { logger().clear_progress(); }
    } clear_progress;
    // The time left, from the nodes run so far (slices of a transformer are alike).
    const auto start = std::chrono::steady_clock::now();
    std::size_t total_nodes = 0, done_nodes = 0;
    for (const auto& slice : plan.slices) total_nodes += slice.nodes.size();
    for (std::size_t index = 0; index < count; ++index) {
        const GraphSlice& slice = plan.slices[index];
        std::string left;
        if (done_nodes > 0) {
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            left = fmt::format(" | about {:.0f} s left", elapsed * static_cast<double>(total_nodes - done_nodes) /
                                                             static_cast<double>(done_nodes));
        }
        logger().progress(fmt::format("{} | slice {} of {} | {} of {} {} compared{}",
                                      plan.session_budget ? "Comparison in slices" : "Layer-wise comparison", index + 1,
                                      count, done_outputs, total_outputs, plan.session_budget ? "outputs" : "layers",
                                      left));
        logger().verbose(
            fmt::format("Slice {} of {}: {} node(s), {} output(s) to compare, {} cut input(s), about {} "
                        "per runner and iteration",
                        index + 1, count, slice.nodes.size(), slice.marked.size(), slice.cut_inputs.size(),
                        size_text(slice.bytes)));
        view.show(slice, cut_input_types(slice, kept));
        RunResults results;
        for (std::size_t r = 0; r < runners.size(); ++r) {
            const DataLoaderFn feeds = [&](std::size_t iteration, const TensorMetadata&) -> std::optional<TensorMap> {
                if (iteration >= plan.feeds.size()) return std::nullopt;
                TensorMap feed = plan.feeds[iteration];
                for (const auto& name : slice.cut_inputs) feed.set(name, kept[r][iteration].at(name));
                return feed;
            };
            RunResults ran = Comparator::run({runners[r].get()}, feeds, options);
            // Inputs are saved (the first slice's feeds are the model's), and warm-up runs made, once.
            options.save_inputs_path.reset();
            auto& [name, iterations] = ran.lst.front();
            for (std::size_t i = 0; i < iterations.size(); ++i) {
                TensorMap& outputs = iterations[i].outputs;
                TensorMap next;
                for (const auto& cut : slice.kept)
                    next.set(cut, kept[r][i].contains(cut) ? kept[r][i].at(cut) : outputs.at(cut));
                kept[r][i] = std::move(next);
                TensorMap compared;
                for (const auto& marked : slice.marked)
                    if (const Tensor* tensor = outputs.find(marked)) compared.set(marked, *tensor);
                outputs = std::move(compared);
                if (sink) sink(name, i, iterations[i]);
            }
            results.add(std::move(iterations), name);
        }
        options.warm_up = 0;
        if (!job.postprocess.empty()) Comparator::postprocess(results, postprocess_func::top_k(job.postprocess));
        const bool go_on = comparison.compare(results, index + 1 == count);
        if (job.validate) run.valid = Comparator::validate(results, true, true) && run.valid;
        done_outputs += slice.marked.size();
        done_nodes += slice.nodes.size();
        if (!go_on) {
            if (sink && index + 1 < count)
                logger().warning(
                    fmt::format("--fail-fast stopped the layer-wise comparison after slice {} of {}: the "
                                "saved outputs hold the layers run up to there",
                                index + 1, count));
            break;
        }
    }
    run.accuracy = comparison.result();
    return run;
}

}  // namespace polygraphy::job_detail
