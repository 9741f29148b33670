// `debug diff`: two graphs of one network on the same inputs, pair by pair (polygraphy/job/diff_job.h).
#include "polygraphy/job/diff_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "common/text_util.h"
#include "job/job_internal.h"
#include "polygraphy/backend/onnx/functions.h"
#include "polygraphy/backend/onnx/slices.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/json.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/html_report.h"
#include "polygraphy/comparator/model_explorer.h"

namespace polygraphy {
namespace {

OnnxModel load_model(const ModelJob& job) {
    OnnxModel model = build_model_loader(job)();
    // Pairs and groups are found on the graph that runs: mark-all inlines local functions anyway.
    if (calls_local_functions(*model)) inline_local_functions(*model);
    return model;
}

// The value A gives to a tensor that B declares with `dtype`: B's inputs and a group's inputs are fed
// in B's own dtypes (an fp16 graph reads fp16).
Tensor in_dtype(const Tensor& value, DataType dtype) {
    return value.dtype() == dtype ? value : value.cast(dtype);
}

void check_inputs_pair(const GraphMatching& matching, const TensorMetadata& a_inputs, const TensorMetadata& b_inputs) {
    for (const TensorPair& pair : matching.inputs) {
        const MetadataEntry& a = a_inputs.at(pair.a);
        const MetadataEntry& b = b_inputs.at(pair.b);
        if (a.dtype && b.dtype && *a.dtype != *b.dtype && !(dtype_is_floating(*a.dtype) && dtype_is_floating(*b.dtype)))
            throw UsageError(fmt::format("Graph input '{}' of A ({}) cannot feed graph input '{}' of B ({})", pair.a,
                                         dtype_name(*a.dtype), pair.b, dtype_name(*b.dtype)));
        const bool fixed = a.shape && b.shape && !is_shape_dynamic(*a.shape) && !is_shape_dynamic(*b.shape);
        if (fixed && *a.shape != *b.shape)
            throw UsageError(
                fmt::format("Graph input '{}' of A has shape {}, which graph input '{}' of B (shape {}) "
                            "cannot take",
                            pair.a, dyn_shape_to_string(*a.shape), pair.b, dyn_shape_to_string(*b.shape)));
    }
}

// The feed of B for one of A's feeds.
TensorMap feed_of_b(const GraphMatching& matching, const TensorMap& feed_a, const TensorMetadata& b_inputs) {
    TensorMap feed;
    for (const TensorPair& pair : matching.inputs) {
        const Tensor* value = feed_a.find(pair.a);
        if (!value) throw UsageError(fmt::format("The data loader gave no value for graph input '{}' of A", pair.a));
        const MetadataEntry& declared = b_inputs.at(pair.b);
        if (declared.shape && !shape_matches(value->shape(), *declared.shape))
            throw UsageError(fmt::format(
                "Graph input '{}' of A has shape {}, which graph input '{}' of B (shape {}) cannot take: give shapes "
                "both accept with --input-shapes",
                pair.a, shape_to_string(value->shape()), pair.b, dyn_shape_to_string(*declared.shape)));
        feed.set(pair.b, declared.dtype ? in_dtype(*value, *declared.dtype) : *value);
    }
    return feed;
}

// A value a run gave, or a ModelError (a backend may leave out some marked tensors).
const Tensor& value_of(const TensorMap& values, const std::string& name, const char* side) {
    const Tensor* value = values.find(name);
    if (!value) throw ModelError(fmt::format("{} gave no value for '{}'", side, name));
    return *value;
}

// The dtype and shape of one of B's values: what a group model declares for the paired tensors it
// reads (B's values themselves are freed slice by slice).
struct ValueType {
    DataType dtype;
    Shape shape;
};
using ValueTypes = std::unordered_map<std::string, ValueType>;

// A model of B's group alone: its nodes, the weights they read, the paired tensors they read as
// inputs (declared as B's values of them are) and the pair's tensor as its output.
onnx::ModelProto group_model(const onnx::ModelProto& b, const TensorPair& pair, const ValueTypes& b_types) {
    onnx::ModelProto model;
    model.set_ir_version(b.ir_version());
    *model.mutable_opset_import() = b.opset_import();
    onnx::GraphProto& graph = *model.mutable_graph();
    graph.set_name("debug_diff_group");
    std::unordered_set<std::string> weights_needed, defined;
    for (int n : pair.b_nodes) {
        const onnx::NodeProto& node = b.graph().node(n);
        *graph.add_node() = node;
        for (const auto& input : node.input()) weights_needed.insert(input);
    }
    for (const auto& initializer : b.graph().initializer())
        if (weights_needed.contains(initializer.name()) && defined.insert(initializer.name()).second)
            *graph.add_initializer() = initializer;
    for (const std::string& name : pair.b_inputs) {
        const ValueType& value = b_types.at(name);
        onnx::ValueInfoProto& input = *graph.add_input();
        input.set_name(name);
        auto& type = *input.mutable_type()->mutable_tensor_type();
        type.set_elem_type(dtype_to_onnx(value.dtype));
        auto& shape = *type.mutable_shape();
        for (int64_t dim : value.shape) shape.add_dim()->set_dim_value(dim);
    }
    graph.add_output()->set_name(pair.b);
    return model;
}

// Runs B's group alone on A's values.
class LocalRunner {
public:
    LocalRunner(const DiffJob& job, const onnx::ModelProto& b) : job_(job), b_(b) {}

    Tensor run(const TensorPair& pair, const std::unordered_map<std::string, std::string>& a_of_b,
               const TensorMap& a_values, const ValueTypes& b_types) const {
        TensorMap feed;
        for (const std::string& name : pair.b_inputs) {
            const Tensor& a_value = value_of(a_values, a_of_b.at(name), "A");
            const auto b_type = b_types.find(name);
            if (b_type == b_types.end()) throw ModelError(fmt::format("B gave no value for '{}'", name));
            const auto& [b_dtype, b_shape] = b_type->second;
            if (static_cast<int64_t>(a_value.numel()) != shape_volume(b_shape))
                throw ModelError(fmt::format("A's '{}' has shape {}, B's '{}' shape {}", a_of_b.at(name),
                                             shape_to_string(a_value.shape()), name, shape_to_string(b_shape)));
            feed.set(name, in_dtype(a_value, b_dtype).reshaped(b_shape));
        }
        const onnx::ModelProto model = group_model(b_, pair, b_types);
        TensorMap outputs;
        try {
            // A session of its own, not a runner: a runner's set-up costs more than most groups' run.
            // With B's settings when B runs on the built-in runtime, so that a node computes as there.
            const auto* ref_b = std::get_if<RefRunnerStep>(&job_.runner_b);
            const ref::Session session(model, ref_b ? ref_b->options : ref::SessionOptions{});
            outputs = session.run(feed);
        } catch (const UnsupportedError&) {
            // The built-in runtime lacks an op of the group: B's own backend runs it.
            if (std::holds_alternative<RefRunnerStep>(job_.runner_b)) throw;
            auto shared = std::make_shared<onnx::ModelProto>(model);
            std::unique_ptr<BaseRunner> runner = build_runner(job_.runner_b, [shared] { return shared; });
            runner->activate();
            outputs = runner->infer(feed, false);
            runner->deactivate();
        }
        return value_of(outputs, pair.b, "B's group");
    }

private:
    const DiffJob& job_;
    const onnx::ModelProto& b_;
};

// The tensors one side yields: its paired tensors that a node produces (graph inputs come from the
// feed), in graph order.
std::vector<std::string> yielded_tensors(const onnx::GraphProto& graph, const std::vector<TensorPair>& pairs,
                                         bool side_a) {
    std::unordered_set<std::string> paired;
    for (const TensorPair& pair : pairs) paired.insert(side_a ? pair.a : pair.b);
    std::vector<std::string> names;
    for (const auto& node : graph.node())
        for (const auto& output : node.output())
            if (!output.empty() && paired.erase(output)) names.push_back(output);
    return names;
}

// Runs a runner once, holding its session only meanwhile: what is held beside A's values is one
// session at a time (BENCHMARKS.md, debug diff).
TensorMap run_once(BaseRunner& runner, const TensorMap& feed) {
    runner.activate();
    TensorMap values = runner.infer(feed, false);
    runner.deactivate();
    return values;
}

// The slices B runs in when its yielded tensors of one sample do not fit the compare memory budget
// (empty when they fit, or when their sizes are unknown): the layer-wise run's planning, with B's
// values of a slice and the runtime's own copy of them (two copies) within the budget.
std::vector<GraphSlice> plan_b_slices(onnx::ModelProto& b, const TensorMap& feed,
                                      const std::optional<std::size_t>& memory_budget, std::size_t a_bytes) {
    constexpr std::size_t kCopies = 2;
    const std::size_t budget =
        memory_budget.value_or(std::max(kDefaultCompareMemoryBudget, job_detail::weight_bytes(b)));
    // B's paired tensors are the counterparts of A's, of the same sizes in dtypes at most twice as
    // wide (float32 against float16 or int8, float64 against float32): when those fit, B runs
    // whole without the shape inference a plan needs (BENCHMARKS.md, debug diff).
    if (2 * a_bytes * kCopies <= budget) return {};
    std::unordered_map<std::string, std::size_t> bytes = job_detail::tensor_bytes(b, feed);
    if (bytes.empty()) {
        logger().warning(
            "The sizes of B's tensors are unknown (shape inference could not tell them): B runs whole, whatever the "
            "compare memory budget");
        return {};
    }
    job_detail::estimate_unknown_sizes(b.graph(), feed, bytes);
    std::vector<GraphSlice> slices =
        job_detail::plan_model_slices(b.graph(), bytes, kCopies, budget, memory_budget.has_value());
    if (slices.size() < 2) return {};
    logger().info(fmt::format(
        "B runs in {} slices: its paired tensors do not fit the compare memory budget of {} at once; each slice is "
        "compared and freed before the next runs",
        slices.size(), job_detail::size_text(budget)));
    return slices;
}

// Runs B slice by slice (SliceView: each slice as a model of its own, fed with the graph inputs and
// the cut tensors of B's earlier slices), handing each slice's yielded tensors to `sink`. The whole
// graph is back when it returns.
void run_b_in_slices(onnx::ModelProto& b, const std::vector<GraphSlice>& slices, BaseRunner& runner,
                     const TensorMap& feed, const std::function<void(const TensorMap&)>& sink) {
    SliceView view(b);
    std::vector<std::vector<TensorMap>> kept(1, std::vector<TensorMap>(1));
    for (const GraphSlice& slice : slices) {
        view.show(slice, job_detail::cut_input_types(slice, kept));
        TensorMap slice_feed;
        for (const auto& name : slice.graph_inputs)
            if (const Tensor* value = feed.find(name)) slice_feed.set(name, *value);
        for (const auto& name : slice.cut_inputs) slice_feed.set(name, kept[0][0].at(name));
        TensorMap outputs = run_once(runner, slice_feed);
        TensorMap next;
        for (const auto& name : slice.kept)
            next.set(name, kept[0][0].contains(name) ? kept[0][0].at(name) : value_of(outputs, name, "B"));
        kept[0][0] = std::move(next);
        TensorMap yielded;
        for (const auto& name : slice.marked)
            if (const Tensor* value = outputs.find(name)) yielded.set(name, *value);
        outputs = TensorMap{};
        sink(yielded);
    }
}

std::string op_types(const onnx::GraphProto& graph, const std::vector<int>& nodes) {
    std::string text;
    for (int n : nodes) {
        const std::string& op = graph.node(n).op_type();
        if (op == "Constant") continue;
        text += (text.empty() ? "" : "+") + op;
    }
    return text;
}

// The ranking figure of a pair's local error; pairs that have none go last.
double blame_figure(const PairDiff& pair, BlameFigure by) {
    if (!pair.local || !pair.local->error.empty()) return -1;
    const double figure = by == BlameFigure::kGain ? std::abs(pair.local->gain_error) : pair.local->relative_rms;
    return std::isnan(figure) ? -1 : figure;
}

using text::figure;

std::string join(const std::vector<std::string>& names) {
    return text::join_first(names, 3);
}

void write_figures(json::Writer& writer, const ErrorFigures& figures) {
    writer.begin_object();
    writer.key("passed").value(figures.passed);
    writer.key("size").value(figures.size);
    writer.key("max_abs_diff").value(figures.max_abs);
    writer.key("mean_abs_diff").value(figures.mean_abs);
    writer.key("max_rel_diff").value(figures.max_rel);
    writer.key("mean_rel_diff").value(figures.mean_rel);
    writer.key("cosine_similarity").value(figures.cosine);
    writer.key("sqnr_db").value(figures.sqnr_db);
    writer.key("relative_rms").value(figures.relative_rms);
    writer.key("gain_error").value(figures.gain_error);
    writer.key("failing_elements").value(figures.failing);
    if (!figures.error.empty()) writer.key("error").value(figures.error);
    writer.end_object();
}

void write_names(json::Writer& writer, const std::vector<std::string>& names) {
    writer.begin_array();
    for (const auto& name : names) writer.value(name);
    writer.end_array();
}

}  // namespace

DiffResult run_diff_job(const DiffJob& job) {
    OnnxModel a = load_model(job.a);
    OnnxModel b = load_model(job.b);
    GraphMatchOptions options = job.matching;
    DiffResult result;
    result.matching = match_graphs(a->graph(), b->graph(), options);
    if (job.save_matches) {
        save_match_file(result.matching, a->graph(), b->graph(), *job.save_matches);
        logger().info("Saved the tensor pairs to: " + *job.save_matches);
    }
    const TensorMetadata a_inputs = get_onnx_input_metadata(a->graph());
    const TensorMetadata b_inputs = get_onnx_input_metadata(b->graph());
    check_inputs_pair(result.matching, a_inputs, b_inputs);
    const bool beyond_outputs = std::any_of(result.matching.pairs.begin(), result.matching.pairs.end(),
                                            [](const TensorPair& pair) { return !pair.b_graph_output; });
    if (!beyond_outputs)
        throw UsageError(fmt::format(
            "Nothing of B was paired with A beyond the graph outputs ({} tensors of A and {} of B unpaired): give "
            "pairs with --match-file",
            result.matching.unmatched_a.size(), result.matching.unmatched_b.size()));
    std::size_t by_kind[5] = {};
    for (const TensorPair& pair : result.matching.pairs) ++by_kind[static_cast<int>(pair.how)];
    logger().info(fmt::format(
        "Paired {} tensors of B with A: {} by name, {} by convention, {} by provenance, {} by structure, {} by the "
        "match file; {} of A and {} of B have no counterpart",
        result.matching.pairs.size(), by_kind[0], by_kind[1], by_kind[2], by_kind[3], by_kind[4],
        result.matching.unmatched_a.size(), result.matching.unmatched_b.size()));

    std::unordered_map<std::string, std::string> a_of_b;
    for (const auto* list : {&result.matching.inputs, &result.matching.pairs})
        for (const TensorPair& pair : *list) a_of_b.emplace(pair.b, pair.a);

    // Each graph yields its paired tensors, and no others (in place: the pairs' node indices hold).
    // A's values of one sample are kept whole, for the local runs; B's are compared slice by slice
    // as they come, and only their types are kept.
    apply_model_step(a, ModifyOutputsStep{yielded_tensors(a->graph(), result.matching.pairs, true)});
    apply_model_step(b, ModifyOutputsStep{yielded_tensors(b->graph(), result.matching.pairs, false)});
    std::unique_ptr<BaseRunner> runner_a = build_runner(job.runner_a, [a] { return a; });
    std::unique_ptr<BaseRunner> runner_b = build_runner(job.runner_b, [b] { return b; });
    const DataLoaderFn data_loader = build_data_loader(job.data_loader);
    const LocalRunner local_runner(job, *b);

    const std::size_t count = result.matching.pairs.size();
    std::unordered_map<std::string, std::vector<std::size_t>> pairs_of_b;
    for (std::size_t i = 0; i < count; ++i) pairs_of_b[result.matching.pairs[i].b].push_back(i);
    std::vector<ErrorAccumulator> total(count, ErrorAccumulator(job.tolerances));
    std::vector<ErrorAccumulator> local(count, ErrorAccumulator(job.tolerances));
    std::vector<std::string> local_errors(count);
    std::optional<std::vector<GraphSlice>> slices;  // planned on the first sample; empty: B runs whole
    while (std::optional<TensorMap> feed_a = data_loader(result.iterations, a_inputs)) {
        const TensorMap feed_b = feed_of_b(result.matching, *feed_a, b_inputs);
        logger().info(fmt::format("Sample {}: running A on {}", result.iterations, runner_a->name()));
        TensorMap a_values = run_once(*runner_a, *feed_a);
        if (!slices) {
            std::size_t a_bytes = 0;
            for (const auto& [name, value] : a_values) a_bytes += value.nbytes();
            slices = plan_b_slices(*b, feed_b, job.memory_budget, a_bytes);
        }
        result.b_slices = std::max<std::size_t>(slices->size(), 1);
        logger().info(fmt::format("Sample {}: running B on {}{}", result.iterations, runner_b->name(),
                                  slices->empty() ? "" : fmt::format(" in {} slices", slices->size())));
        for (const auto& [name, value] : *feed_a) a_values.set(name, value);

        ValueTypes b_types;
        std::vector<bool> b_seen(count, false);
        // B's values as they come: each pair's total figures, and the types the local runs declare.
        auto compare = [&](const TensorMap& b_values) {
            for (const auto& [name, value] : b_values) {
                b_types.insert_or_assign(name, ValueType{value.dtype(), value.shape()});
                const auto found = pairs_of_b.find(name);
                if (found == pairs_of_b.end()) continue;
                for (std::size_t i : found->second) {
                    b_seen[i] = true;
                    if (const Tensor* value_a = a_values.find(result.matching.pairs[i].a))
                        total[i].add(*value_a, value);
                }
            }
        };
        compare(feed_b);
        if (slices->empty()) {
            compare(run_once(*runner_b, feed_b));
        } else {
            run_b_in_slices(*b, *slices, *runner_b, feed_b, compare);
        }

        for (std::size_t i = 0; i < count; ++i) {
            logger().progress(fmt::format("debug diff | sample {} | pair {} of {}", result.iterations, i + 1, count));
            const TensorPair& pair = result.matching.pairs[i];
            const Tensor* value_a = a_values.find(pair.a);
            if (!value_a || !b_seen[i]) {
                total[i].set_error(fmt::format("{} gave no value of it", value_a ? "B" : "A"));
                local[i].set_error(total[i].figures().error);
                continue;
            }
            if (!local_errors[i].empty()) continue;
            try {
                local[i].add(*value_a, local_runner.run(pair, a_of_b, a_values, b_types));
            } catch (const PolygraphyException& error) {
                local_errors[i] = error.what();
            }
        }
        logger().clear_progress();
        ++result.iterations;
    }
    if (result.iterations == 0) throw UsageError("The data loader gave no samples to compare");

    for (std::size_t i = 0; i < count; ++i) {
        PairDiff diff;
        diff.pair = result.matching.pairs[i];
        diff.total = total[i].figures();
        diff.local_error = local_errors[i];
        if (diff.local_error.empty()) diff.local = local[i].figures();
        diff.b_op_types = op_types(b->graph(), diff.pair.b_nodes);
        for (int n : diff.pair.a_nodes) diff.a_node_names.push_back(node_display_name(a->graph(), n));
        for (int n : diff.pair.b_nodes) diff.b_node_names.push_back(node_display_name(b->graph(), n));
        if (diff.pair.b_graph_output) result.passed = result.passed && diff.total.passed;
        if (!result.first_divergence && diff.local && !diff.local->passed) result.first_divergence = i;
        result.pairs.push_back(std::move(diff));
    }
    result.blame.resize(count);
    for (std::size_t i = 0; i < count; ++i) result.blame[i] = i;
    std::stable_sort(result.blame.begin(), result.blame.end(), [&](std::size_t x, std::size_t y) {
        return blame_figure(result.pairs[x], job.blame_by) > blame_figure(result.pairs[y], job.blame_by);
    });
    if (job.model_explorer_paths) {
        save_diff_model_explorer_node_data(result, job, true, job.model_explorer_paths->first);
        save_diff_model_explorer_node_data(result, job, false, job.model_explorer_paths->second);
        logger().info("Saved Model Explorer node data to: " + job.model_explorer_paths->first + " and " +
                      job.model_explorer_paths->second);
    }
    if (job.report_path) {
        save_diff_report(result, job, *job.report_path, &b->graph());
        logger().info("Saved the diff report to: " + *job.report_path);
    }
    return result;
}

std::string format_blame_table(const DiffResult& result, std::size_t top) {
    std::string text = fmt::format(
        "Blame: B's layers by local error (each run alone on A's values of its inputs), over {} sample(s)\n",
        result.iterations);
    text += fmt::format("    {:>4} | {:<32} | {:<32} | {:<10} | {:>11} | {:>11} | {:>11} | {:>11} | {:>11}\n", "Rank",
                        "B node (ops)", "A node(s)", "Match", "local rRMS", "local gain", "local max", "total rRMS",
                        "total max");
    for (std::size_t rank = 0; rank < result.blame.size() && rank < top; ++rank) {
        const PairDiff& diff = result.pairs[result.blame[rank]];
        const std::string b_name =
            fmt::format("{} ({})", diff.b_node_names.empty() ? diff.pair.b : diff.b_node_names.back(), diff.b_op_types);
        text += fmt::format("    {:>4} | {:<32} | {:<32} | {:<10} | {:>11} | {:>11} | {:>11} | {:>11} | {:>11}\n",
                            rank + 1, b_name, join(diff.a_node_names), match_kind_name(diff.pair.how),
                            diff.local ? figure(diff.local->relative_rms) : "-",
                            diff.local ? figure(diff.local->gain_error) : "-",
                            diff.local ? figure(diff.local->max_abs) : "-", figure(diff.total.relative_rms),
                            figure(diff.total.max_abs));
    }
    if (result.first_divergence) {
        const PairDiff& diff = result.pairs[*result.first_divergence];
        text += fmt::format(
            "First divergence: B's '{}' ({}), tensor '{}' against A's '{}': its local error fails the tolerances "
            "(local max abs diff={}, relative RMS={})",
            diff.b_node_names.empty() ? diff.pair.b : diff.b_node_names.back(), diff.b_op_types, diff.pair.b,
            diff.pair.a, figure(diff.local->max_abs), figure(diff.local->relative_rms));
    } else {
        text += "First divergence: none (every layer's local error is within the tolerances)";
    }
    return text;
}

namespace {

// The pairs' figures as a comparison's per-output results, keyed by one graph's tensor names: the
// local figures (the total ones where a pair has none) or the total ones.
IterationCompareResult as_compare_results(const DiffResult& result, const DiffJob& job, bool side_a, bool local) {
    IterationCompareResult errors;
    for (const PairDiff& diff : result.pairs) {
        const ErrorFigures& figures = local && diff.local ? *diff.local : diff.total;
        if (!figures.error.empty()) continue;
        OutputCompareResult entry;
        entry.output_name = side_a ? diff.pair.a : diff.pair.b;
        entry.other_name = side_a ? diff.pair.b : diff.pair.a;
        entry.passed = figures.passed;
        entry.max_absdiff = figures.max_abs;
        entry.mean_absdiff = figures.mean_abs;
        entry.max_reldiff = figures.max_rel;
        entry.mean_reldiff = figures.mean_rel;
        entry.atol = job.tolerances.atol;
        entry.rtol = job.tolerances.rtol;
        errors.set(entry.output_name, entry);
    }
    return errors;
}

}  // namespace

void save_diff_model_explorer_node_data(const DiffResult& result, const DiffJob& job, bool side_a,
                                        const std::string& path) {
    AccuracyResult accuracy;
    accuracy.pairs.push_back({side_a ? "A" : "B", side_a ? "B" : "A", {as_compare_results(result, job, side_a, true)}});
    save_model_explorer_node_data(accuracy, path);
}

void save_diff_report(const DiffResult& result, const DiffJob& job, const std::string& path,
                      const onnx::GraphProto* b_graph) {
    if (is_html_report_path(path)) {
        if (!b_graph) throw UsageError("An HTML report of debug diff needs B's graph");
        AccuracyResult accuracy;
        accuracy.pairs.push_back(
            {"B's layers alone on A's values (local error)", "A", {as_compare_results(result, job, false, true)}});
        accuracy.pairs.push_back({"A", "B (total error)", {as_compare_results(result, job, false, false)}});
        std::optional<Divergence> divergence;
        if (result.first_divergence) {
            // The earliest group whose local error fails, named as B's node that writes the tensor.
            const PairDiff& diff = result.pairs[*result.first_divergence];
            divergence = Divergence{accuracy.pairs.front().first_runner,
                                    "A",
                                    0,
                                    diff.pair.b,
                                    diff.b_node_names.empty() ? diff.pair.b : diff.b_node_names.back(),
                                    diff.b_op_types,
                                    accuracy.pairs.front().iterations.front().at(diff.pair.b)};
        }
        ReportContext context;
        context.title = "debug diff: " + job.a.path + " against " + job.b.path;
        context.graph = b_graph;
        for (const PairDiff& diff : result.pairs)
            context.pairing.emplace(
                diff.pair.b, diff.pair.confidence < 1
                                 ? fmt::format("{} ({:.2f})", match_kind_name(diff.pair.how), diff.pair.confidence)
                                 : std::string(match_kind_name(diff.pair.how)));
        save_html_report(accuracy, divergence, context, path);
        return;
    }
    std::string text;
    json::Writer writer(&text);
    writer.begin_object();
    writer.key("passed").value(result.passed);
    writer.key("a").value(job.a.path);
    writer.key("b").value(job.b.path);
    writer.key("samples").value(static_cast<uint64_t>(result.iterations));
    writer.key("blame_by").value(job.blame_by == BlameFigure::kGain ? "gain" : "error");
    writer.key("tolerances").begin_object();
    writer.key("atol").value(job.tolerances.atol).key("rtol").value(job.tolerances.rtol);
    writer.end_object();
    writer.key("inputs").begin_array();
    for (const TensorPair& pair : result.matching.inputs) {
        writer.begin_object().key("a").value(pair.a).key("b").value(pair.b);
        writer.key("how").value(match_kind_name(pair.how)).end_object();
    }
    writer.end_array();
    writer.key("pairs").begin_array();
    for (const PairDiff& diff : result.pairs) {
        writer.begin_object();
        writer.key("a").value(diff.pair.a).key("b").value(diff.pair.b);
        writer.key("how").value(match_kind_name(diff.pair.how));
        writer.key("confidence").value(diff.pair.confidence);
        writer.key("detail").value(diff.pair.detail);
        writer.key("a_nodes");
        write_names(writer, diff.a_node_names);
        writer.key("b_nodes");
        write_names(writer, diff.b_node_names);
        writer.key("b_ops").value(diff.b_op_types);
        writer.key("figures");
        write_figures(writer, diff.total);
        writer.key("local");
        if (diff.local)
            write_figures(writer, *diff.local);
        else
            writer.null();
        if (!diff.local_error.empty()) writer.key("local_error").value(diff.local_error);
        writer.end_object();
    }
    writer.end_array();
    writer.key("unmatched_a");
    write_names(writer, result.matching.unmatched_a);
    writer.key("unmatched_b");
    write_names(writer, result.matching.unmatched_b);
    writer.key("blame").begin_array();
    for (std::size_t rank = 0; rank < result.blame.size(); ++rank) {
        const PairDiff& diff = result.pairs[result.blame[rank]];
        if (!diff.local) continue;
        writer.begin_object();
        writer.key("rank").value(static_cast<uint64_t>(rank + 1));
        writer.key("a").value(diff.pair.a).key("b").value(diff.pair.b);
        writer.key("b_node").value(diff.b_node_names.empty() ? "" : diff.b_node_names.back());
        writer.key("local_relative_rms").value(diff.local->relative_rms);
        writer.key("local_gain_error").value(diff.local->gain_error);
        writer.key("total_relative_rms").value(diff.total.relative_rms);
        writer.end_object();
    }
    writer.end_array();
    writer.key("first_divergence");
    if (result.first_divergence) {
        const PairDiff& diff = result.pairs[*result.first_divergence];
        writer.begin_object().key("a").value(diff.pair.a).key("b").value(diff.pair.b);
        writer.key("b_node").value(diff.b_node_names.empty() ? "" : diff.b_node_names.back()).end_object();
    } else {
        writer.null();
    }
    writer.end_object();
    writer.finish();
    text += "\n";
    write_file_atomically(path, text);
}

}  // namespace polygraphy
