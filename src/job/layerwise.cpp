// Layer-wise runs in bounded memory: the outputs of a `mark all` run, compared slice by slice.
//
// ONNX-Runtime hands back every marked output of a run at once, so comparing each layer as soon as
// it is produced cannot bound its memory: instead each runner runs once per slice of the outputs,
// with only that slice marked, and the slice is compared and freed before the next one runs.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "job/job_internal.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::job_detail {
namespace {

std::string size_text(std::size_t bytes) {
    const double value = static_cast<double>(bytes);
    if (bytes >= (std::size_t{1} << 30)) return fmt::format("{:.2f} GiB", value / (1 << 30));
    if (bytes >= (std::size_t{1} << 20)) return fmt::format("{:.1f} MiB", value / (1 << 20));
    return fmt::format("{:.1f} KiB", value / (1 << 10));
}

// Bytes of the model's initializers, from their types and dims (wherever their data lives).
std::size_t weight_bytes(const onnx::ModelProto& model) {
    std::size_t total = 0;
    for (const auto& initializer : model.graph().initializer()) {
        if (initializer.data_type() == onnx::TensorProto::STRING) continue;
        std::size_t count = 1;
        for (int64_t dim : initializer.dims()) count *= static_cast<std::size_t>(std::max<int64_t>(dim, 0));
        total += count * dtype_size(dtype_from_onnx(initializer.data_type()));
    }
    return total;
}

// Estimated bytes of each graph output for the first feed's input shapes (nullopt: unknown).
std::vector<std::optional<std::size_t>> output_bytes(const onnx::ModelProto& model, const TensorMap& feed) {
    OrderedMap<Shape> input_shapes;
    for (const auto& [name, tensor] : feed) input_shapes.set(name, tensor.shape());
    std::vector<std::optional<std::size_t>> bytes;
    for (const auto& [name, entry] : infer_output_metadata(model, input_shapes)) {
        const bool known =
            entry.dtype && *entry.dtype != DataType::kString && entry.shape &&
            std::none_of(entry.shape->begin(), entry.shape->end(), [](const Dim& dim) { return dim.is_dynamic(); });
        if (!known) {
            bytes.push_back(std::nullopt);
            continue;
        }
        std::size_t count = 1;
        for (const Dim& dim : *entry.shape) count *= static_cast<std::size_t>(dim.value);
        bytes.push_back(count * dtype_size(*entry.dtype));
    }
    return bytes;
}

}  // namespace

std::vector<OutputSlice> plan_output_slices(const std::vector<std::string>& outputs,
                                            const std::vector<std::optional<std::size_t>>& bytes, std::size_t copies,
                                            std::size_t budget) {
    if (bytes.size() != outputs.size())
        throw InternalError("plan_output_slices: " + std::to_string(bytes.size()) + " sizes for " +
                            std::to_string(outputs.size()) + " outputs");
    std::size_t largest_known = 0;
    for (const auto& size : bytes)
        if (size) largest_known = std::max(largest_known, *size);
    std::vector<OutputSlice> slices;
    OutputSlice current;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const std::size_t size = bytes[i].value_or(largest_known);
        if (size * copies > budget)
            throw UsageError(fmt::format(
                "The compare memory budget of {} is too small for one layer: output '{}' takes {} per runner and "
                "iteration, {} for the {} copies a comparison holds (--compare-memory-budget)",
                size_text(budget), outputs[i], size_text(size), size_text(size * copies), copies));
        if (!current.outputs.empty() && (current.bytes + size) * copies > budget) {
            slices.push_back(std::move(current));
            current = OutputSlice{};
        }
        current.outputs.push_back(outputs[i]);
        current.bytes += size;
    }
    if (!current.outputs.empty()) slices.push_back(std::move(current));
    return slices;
}

bool may_run_in_slices(const RunJob& job) {
    if (!job.model || job.runners.size() < 2 || job.save_outputs_path || !job.load_outputs_paths.empty()) return false;
    return std::any_of(job.model->steps.begin(), job.model->steps.end(),
                       [](const ModelStep& step) { return std::holds_alternative<ModifyOutputsStep>(step); });
}

std::optional<SlicePlan> plan_layerwise_run(const RunJob& job, const OnnxLoader& model) {
    if (!may_run_in_slices(job)) return std::nullopt;
    const OnnxModel loaded = model();
    SlicePlan plan;
    plan.data_loader = build_data_loader(job.data_loader);
    const TensorMetadata inputs = get_onnx_input_metadata(loaded->graph());
    std::optional<TensorMap> first_feed;
    std::size_t iterations = 0;
    while (std::optional<TensorMap> feed = plan.data_loader(iterations, inputs)) {
        if (!first_feed) first_feed = std::move(feed);
        ++iterations;
    }
    if (!first_feed) return std::nullopt;

    std::vector<std::string> names;
    for (const auto& output : loaded->graph().output()) names.push_back(output.name());
    const std::vector<std::optional<std::size_t>> bytes = output_bytes(*loaded, *first_feed);
    if (std::none_of(bytes.begin(), bytes.end(), [](const auto& size) { return size.has_value(); })) {
        logger().warning(
            "The sizes of the outputs are unknown (shape inference could not tell them): comparing them "
            "all at once, whatever the compare memory budget");
        return std::nullopt;
    }
    // Every runner's outputs for every iteration, plus the runtime's own copy of the slice it produces.
    const std::size_t copies = job.runners.size() * iterations + 1;
    const std::size_t budget =
        job.compare.memory_budget.value_or(std::max(kDefaultCompareMemoryBudget, weight_bytes(*loaded)));
    plan.slices = plan_output_slices(names, bytes, copies, budget);
    if (plan.slices.size() < 2) return std::nullopt;
    std::size_t total = 0;
    for (const auto& slice : plan.slices) total += slice.bytes;
    logger().info(
        fmt::format("Layer-wise comparison in {} slices: {} outputs take about {} per runner and iteration, "
                    "over the compare memory budget of {}; each runner runs once per slice",
                    plan.slices.size(), names.size(), size_text(total), size_text(budget)));
    return plan;
}

SlicedRun run_in_slices(const RunJob& job, const std::vector<std::unique_ptr<BaseRunner>>& runners,
                        onnx::ModelProto& model, const SlicePlan& plan) {
    onnx::GraphProto& graph = *model.mutable_graph();
    // The full list is put back for what reads the model afterwards (divergence search, report).
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> all_outputs;
    all_outputs.Swap(graph.mutable_output());
    struct RestoreOutputs {
        onnx::GraphProto& graph;
        google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& outputs;
        ~RestoreOutputs() { graph.mutable_output()->Swap(&outputs); }
    } restore{graph, all_outputs};
    std::unordered_map<std::string, const onnx::ValueInfoProto*> by_name;
    for (const auto& output : all_outputs) by_name.emplace(output.name(), &output);

    std::vector<BaseRunner*> runner_pointers;
    for (const auto& runner : runners) runner_pointers.push_back(runner.get());
    SlicedComparison comparison(build_compare_func(job.compare), job.compare.fail_fast);
    SlicedRun run;
    Comparator::RunOptions options = job.inference;
    std::size_t total_outputs = 0, done_outputs = 0;
    for (const auto& slice : plan.slices) total_outputs += slice.outputs.size();
    const std::size_t count = plan.slices.size();
    struct ClearProgress {
        ~ClearProgress() { logger().clear_progress(); }
    } clear_progress;
    for (std::size_t index = 0; index < count; ++index) {
        const OutputSlice& slice = plan.slices[index];
        logger().progress(fmt::format("Layer-wise comparison | slice {} of {} | {} of {} layers compared", index + 1,
                                      count, done_outputs, total_outputs));
        logger().verbose(fmt::format("Slice {} of {}: {} output(s), '{}' to '{}', about {} per runner and iteration",
                                     index + 1, count, slice.outputs.size(), slice.outputs.front(),
                                     slice.outputs.back(), size_text(slice.bytes)));
        graph.clear_output();
        for (const auto& name : slice.outputs) *graph.add_output() = *by_name.at(name);
        RunResults results = Comparator::run(runner_pointers, plan.data_loader, options);
        // Inputs are saved, and warm-up runs made, once.
        options.save_inputs_path.reset();
        options.warm_up = 0;
        if (!job.postprocess.empty()) Comparator::postprocess(results, postprocess_func::top_k(job.postprocess));
        const bool go_on = comparison.compare(results, index + 1 == count);
        if (job.validate) run.valid = Comparator::validate(results, true, true) && run.valid;
        done_outputs += slice.outputs.size();
        if (!go_on) break;
    }
    run.accuracy = comparison.result();
    return run;
}

}  // namespace polygraphy::job_detail
