// `debug precision`: the nodes to keep in higher precision (polygraphy/job/precision_job.h).
#include "polygraphy/job/precision_job.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "polygraphy/backend/onnx/capability.h"
#include "polygraphy/backend/onnx/functions.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/job/diff_job.h"

#include "common/text_util.h"
#include "job/job_internal.h"

namespace polygraphy {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Holds the library's own info lines (each conversion's summary, the diff's sample lines) back while
// the search builds and runs its candidates: the search reports each evaluation itself.
class QuietInfo {
public:
    QuietInfo() : saved_(logger().severity()) {
        if (static_cast<int>(saved_) < static_cast<int>(Severity::kWarning)) logger().set_severity(Severity::kWarning);
    }
    ~QuietInfo() { logger().set_severity(saved_); }
    QuietInfo(const QuietInfo&) = delete;
    QuietInfo& operator=(const QuietInfo&) = delete;

private:
    Severity saved_;
};

bool has_graph_attribute(const onnx::NodeProto& node) {
    for (const auto& attribute : node.attribute())
        if (attribute.has_g() || attribute.graphs_size() > 0) return true;
    return false;
}

bool is_default_domain(const std::string& domain) {
    return domain.empty() || domain == "ai.onnx";
}

// Names every unnamed node "<op>_<index>" (unique), so that every node a search keeps has a name.
void name_unnamed_nodes(onnx::GraphProto& graph) {
    std::unordered_set<std::string> taken;
    for (const auto& node : graph.node()) taken.insert(node.name());
    std::size_t renamed = 0;
    for (int n = 0; n < graph.node_size(); ++n) {
        onnx::NodeProto& node = *graph.mutable_node(n);
        if (!node.name().empty()) continue;
        std::string name = fmt::format("{}_{}", node.op_type(), n);
        for (int k = 1; taken.contains(name); ++k) name = fmt::format("{}_{}_{}", node.op_type(), n, k);
        taken.insert(name);
        node.set_name(name);
        ++renamed;
    }
    if (renamed)
        logger().warning(fmt::format(
            "{} node(s) have no name: they are named '<op>_<index>' here and in the saved model, whose names the "
            "answer uses",
            renamed));
}

// The elem types libonnx's inference tells for the model's tensors (on a copy without the weights'
// values: only their types matter).
std::unordered_map<std::string, int32_t> tensor_elem_types(const onnx::ModelProto& model) {
    onnx::ModelProto copy;
    copy.set_ir_version(model.ir_version());
    *copy.mutable_opset_import() = model.opset_import();
    *copy.mutable_functions() = model.functions();
    onnx::GraphProto& graph = *copy.mutable_graph();
    const onnx::GraphProto& source = model.graph();
    *graph.mutable_node() = source.node();
    *graph.mutable_input() = source.input();
    *graph.mutable_output() = source.output();
    *graph.mutable_value_info() = source.value_info();
    for (const auto& initializer : source.initializer()) {
        onnx::ValueInfoProto& info = *graph.add_input();
        info.set_name(initializer.name());
        auto& type = *info.mutable_type()->mutable_tensor_type();
        type.set_elem_type(initializer.data_type());
        for (int64_t dim : initializer.dims()) type.mutable_shape()->add_dim()->set_dim_value(dim);
    }
    std::unordered_map<std::string, int32_t> types;
    try {
        // libonnx only: the copy has no weight values for the runtime's fallback to run on.
        infer_value_info(copy);
    } catch (const PolygraphyException&) {
        // Types stay unknown: every node counts as a candidate.
    }
    for (const auto* list : {&graph.input(), &graph.output(), &graph.value_info()})
        for (const auto& info : *list)
            if (info.type().has_tensor_type() && info.type().tensor_type().elem_type() != 0)
                types[info.name()] = info.type().tensor_type().elem_type();
    return types;
}

// Why `node` cannot compute in `onnx_type` ("tensor(float16)") at `opset`, by its ONNX schema's type
// constraint of its first output ("" when it can, or when libonnx knows no schema of it).
std::string schema_refusal(const onnx::NodeProto& node, int64_t opset, const std::string& onnx_type) {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), "");
    if (!schema || schema->outputs().empty()) return "";
    const std::string& type_str = schema->outputs()[0].GetTypeStr();
    std::vector<std::string> allowed = {type_str};
    for (const auto& constraint : schema->typeConstraintParams())
        if (constraint.type_param_str == type_str) allowed = constraint.allowed_type_strs;
    if (std::find(allowed.begin(), allowed.end(), onnx_type) != allowed.end()) return "";
    return fmt::format(
        "Node '{}' ({}, opset {}) cannot compute in {}: ONNX's {}-{} output takes {}; keep the op in float32 with "
        "--op-block-list {}",
        node.name(), node.op_type(), opset, onnx_type.substr(7, onnx_type.size() - 8), node.op_type(),
        schema->since_version(), text::join_first(allowed, 8), node.op_type());
}

// Why `figures` fail `check`, or "" when they pass.
std::string check_failure(const ErrorFigures& figures, const PrecisionCheck& check) {
    if (!figures.error.empty()) return figures.error;
    // A NaN or an infinity where the reference has none fails whatever figure is checked.
    if (std::isinf(figures.max_abs))
        return fmt::format("NaN or infinite values where the reference has finite ones ({} of {} elements fail)",
                           figures.failing, figures.size);
    const double atol = check.tolerances.atol, rtol = check.tolerances.rtol;
    auto bounded = [&](double abs_figure, double rel_figure) { return abs_figure <= atol || rel_figure <= rtol; };
    switch (check.error_stat) {
        case PrecisionCheck::ErrorStat::kElementwise:
            if (figures.failing)
                return fmt::format("{} of {} elements beyond atol={} rtol={} (max abs diff {}, max rel diff {})",
                                   figures.failing, figures.size, atol, rtol, text::figure(figures.max_abs),
                                   text::figure(figures.max_rel));
            break;
        case PrecisionCheck::ErrorStat::kMax:
            if (!bounded(figures.max_abs, figures.max_rel))
                return fmt::format("max abs diff {} > atol={} and max rel diff {} > rtol={}",
                                   text::figure(figures.max_abs), atol, text::figure(figures.max_rel), rtol);
            break;
        case PrecisionCheck::ErrorStat::kMean:
            if (!bounded(figures.mean_abs, figures.mean_rel))
                return fmt::format("mean abs diff {} > atol={} and mean rel diff {} > rtol={}",
                                   text::figure(figures.mean_abs), atol, text::figure(figures.mean_rel), rtol);
            break;
    }
    if (check.min_cosine && !(figures.cosine >= *check.min_cosine))
        return fmt::format("cosine similarity {} < {}", text::figure(figures.cosine), *check.min_cosine);
    if (check.min_sqnr_db && !(figures.sqnr_db >= *check.min_sqnr_db))
        return fmt::format("SQNR {} dB < {} dB", text::figure(figures.sqnr_db), *check.min_sqnr_db);
    return "";
}

const char* precision_name(LowPrecision precision) {
    switch (precision) {
        case LowPrecision::kFp16:
            return "fp16";
        case LowPrecision::kBf16:
            return "bf16";
        case LowPrecision::kInt8:
            return "int8";
    }
    return "?";
}

// Builds and checks candidate models: every sample against the reference's outputs.
class Evaluator {
public:
    Evaluator(const PrecisionJob& job, const onnx::ModelProto& model, const std::vector<PrecisionCandidate>& candidates,
              InputList samples)
        : job_(job), model_(model), candidates_(candidates), samples_(std::move(samples)) {}

    // The reference's outputs on every sample; UsageError when they are not finite.
    void run_reference(const onnx::ModelProto& reference) {
        if (job_.check.external) {
            if (!job_.check.external(reference))
                throw UsageError(
                    "The model already fails the check at full precision: nothing kept in low precision can make it "
                    "pass");
            return;
        }
        const ref::Session session(reference, job_.session);
        for (std::size_t i = 0; i < samples_.size(); ++i) {
            TensorMap outputs = session.run(samples_[i]);
            for (const auto& [name, value] : outputs) {
                if (!dtype_is_floating(value.dtype())) continue;
                const Tensor as_double = value.cast(DataType::kFloat64);
                const double* data = static_cast<const double*>(as_double.data());
                for (int64_t k = 0; k < as_double.numel(); ++k)
                    if (!std::isfinite(data[k]))
                        throw UsageError(fmt::format(
                            "The model already fails at full precision: its output '{}' is not finite on sample {} "
                            "(NaN or infinity): fix the model or its inputs before searching",
                            name, i));
            }
            reference_.push_back(std::move(outputs));
        }
    }

    // Builds the model with `kept` (candidate indices) in higher precision and checks it.
    PrecisionEvaluation evaluate(const std::vector<std::size_t>& kept) {
        std::vector<std::size_t> key = kept;
        std::sort(key.begin(), key.end());
        if (const auto found = cache_.find(key); found != cache_.end()) return found->second;
        std::vector<std::string> labels;
        for (std::size_t index : key) labels.push_back(candidates_[index].label);
        PrecisionEvaluation evaluation;
        evaluation.kept = key.size();
        {
            QuietInfo quiet;
            const onnx::ModelProto candidate =
                mixed_precision_model(model_, job_.precision, candidates_, labels, job_.op_block_list);
            if (job_.check.external) {
                evaluation.passed = job_.check.external(candidate);
                if (!evaluation.passed) evaluation.failure = "the check command failed";
            } else {
                evaluation.failure = check_samples(candidate);
                evaluation.passed = evaluation.failure.empty();
            }
        }
        history_.push_back(evaluation);
        logger().info(fmt::format("Evaluation {:>3} | {} of {} kept | {}{}", history_.size(), key.size(),
                                  candidates_.size(), evaluation.passed ? "PASSED" : "FAILED",
                                  evaluation.passed ? "" : " | " + evaluation.failure));
        cache_.emplace(std::move(key), evaluation);
        return evaluation;
    }

    std::size_t samples() const { return samples_.size(); }
    const InputList& feeds() const { return samples_; }
    const std::vector<PrecisionEvaluation>& history() const { return history_; }

private:
    // "" when every output of every sample passes; else the first failure (the search needs no more).
    std::string check_samples(const onnx::ModelProto& candidate) const {
        const ref::Session session(candidate, job_.session);
        for (std::size_t i = 0; i < samples_.size(); ++i) {
            const TensorMap outputs = session.run(samples_[i]);
            for (const auto& [name, expected] : reference_[i]) {
                const Tensor* value = outputs.find(name);
                if (!value) return fmt::format("output '{}' missing", name);
                const std::string failure =
                    check_failure(compute_error_figures(expected, *value, job_.check.tolerances), job_.check);
                if (!failure.empty()) return fmt::format("output '{}', sample {}: {}", name, i, failure);
            }
        }
        return "";
    }

    const PrecisionJob& job_;
    const onnx::ModelProto& model_;
    const std::vector<PrecisionCandidate>& candidates_;
    InputList samples_;
    std::vector<TensorMap> reference_;
    std::map<std::vector<std::size_t>, PrecisionEvaluation> cache_;
    std::vector<PrecisionEvaluation> history_;
};

// Ops whose outputs hold exactly values of their inputs, in any float type: they round nothing
// themselves, so the error of a group they are in is its computing node's. They rank after every node
// that computes (keeping one still matters where it joins two kept nodes).
bool moves_data_only(const std::string& op) {
    static const std::unordered_set<std::string> kOps = {
        "Identity",  "Reshape",      "Transpose",    "Squeeze", "Unsqueeze", "Flatten",
        "Concat",    "Split",        "Slice",        "Gather",  "GatherND",  "GatherElements",
        "Expand",    "Tile",         "Pad",          "Relu",    "Neg",       "Abs",
        "MaxPool",   "DepthToSpace", "SpaceToDepth", "Where",   "ScatterND", "ScatterElements",
        "ReduceMax", "ReduceMin"};
    return kOps.contains(op);
}

// A data-moving node (moves_data_only) rounds nothing, but between two kept nodes it must be kept too,
// or the value crosses it in low precision (the underflow or overflow the kept nodes avoid). Its
// group's local error is not its own: it ranks as the lower of its best-ranked producer and consumer
// (through chains of such nodes: a few passes).
void inherit_scores_of_data_movement(const onnx::GraphProto& graph, const std::vector<PrecisionCandidate>& candidates,
                                     std::vector<double>& score) {
    std::unordered_map<std::string, std::size_t> candidate_of;
    for (std::size_t c = 0; c < candidates.size(); ++c) candidate_of.emplace(candidates[c].label, c);
    std::unordered_map<std::string, int> producer;
    std::unordered_map<std::string, std::vector<int>> consumers;
    std::vector<int> moving;
    for (int n = 0; n < graph.node_size(); ++n) {
        const onnx::NodeProto& node = graph.node(n);
        for (const auto& output : node.output()) producer.emplace(output, n);
        for (const auto& input : node.input()) consumers[input].push_back(n);
        if (moves_data_only(node.op_type()) && candidate_of.contains(node.name())) moving.push_back(n);
    }
    auto score_of = [&](int n) {
        const auto found = candidate_of.find(graph.node(n).name());
        return found == candidate_of.end() ? -1.0 : score[found->second];
    };
    std::unordered_set<std::string> graph_inputs, graph_outputs;
    for (const auto& input : graph.input()) graph_inputs.insert(input.name());
    for (const auto& output : graph.output()) graph_outputs.insert(output.name());
    for (int n : moving) score[candidate_of.at(graph.node(n).name())] = -1;
    constexpr double kFloat32Always = std::numeric_limits<double>::infinity();  // graph inputs and outputs
    std::vector<double> inherited(moving.size(), -1);
    for (int pass = 0; pass < 4; ++pass) {
        for (std::size_t m = 0; m < moving.size(); ++m) {
            const onnx::NodeProto& node = graph.node(moving[m]);
            double from_producers = -1, from_consumers = -1;
            for (const auto& input : node.input()) {
                if (graph_inputs.contains(input)) from_producers = kFloat32Always;
                if (const auto found = producer.find(input); found != producer.end())
                    from_producers = std::max(from_producers, score_of(found->second));
            }
            for (const auto& output : node.output()) {
                if (graph_outputs.contains(output)) from_consumers = kFloat32Always;
                if (const auto found = consumers.find(output); found != consumers.end())
                    for (int consumer : found->second) from_consumers = std::max(from_consumers, score_of(consumer));
            }
            inherited[m] = std::min(from_producers, from_consumers);
        }
        for (std::size_t m = 0; m < moving.size(); ++m)
            score[candidate_of.at(graph.node(moving[m]).name())] = inherited[m];
    }
}

// The candidates ranked by the local error a `debug diff` replay measures: the reference (A) against
// the model with nothing kept (B). Candidates no pair blames keep their graph order, after the others.
std::vector<std::size_t> rank_candidates(const PrecisionJob& job, const onnx::ModelProto& reference,
                                         const onnx::ModelProto& nothing_kept,
                                         const std::vector<PrecisionCandidate>& candidates, const InputList& feeds) {
    std::vector<double> score(candidates.size(), -1);
    try {
        job_detail::ScratchFolder scratch("polygraphy-precision");
        const std::string a_path = scratch.file("reference.onnx"), b_path = scratch.file("low_precision.onnx");
        DiffJob diff;
        {
            QuietInfo quiet;
            save_onnx(reference, a_path);
            save_onnx(nothing_kept, b_path);
        }
        diff.a = ModelJob{a_path};
        diff.b = ModelJob{b_path};
        auto* ref_b = &std::get<RefRunnerStep>(diff.runner_b);
        ref_b->options = job.session;
        std::get<RefRunnerStep>(diff.runner_a).options = job.session;
        diff.data_loader.custom = data_loader_from_list(feeds);
        diff.tolerances = job.check.tolerances;
        DiffResult result;
        {
            QuietInfo quiet;
            result = run_diff_job(diff);
        }
        std::unordered_map<std::string, std::size_t> candidate_of;
        for (std::size_t c = 0; c < candidates.size(); ++c)
            for (const auto& name : candidates[c].nodes) candidate_of.emplace(name, c);
        for (const PairDiff& pair : result.pairs) {
            if (!pair.local || !pair.local->error.empty()) continue;
            // A NaN or an infinity where the reference is finite (an overflow) outranks any finite error.
            double figure =
                std::isinf(pair.local->max_abs) ? std::numeric_limits<double>::infinity() : pair.local->relative_rms;
            if (std::isnan(figure)) continue;
            for (const auto& name : pair.b_node_names) {
                const auto found = candidate_of.find(name);
                if (found == candidate_of.end()) continue;
                score[found->second] = std::max(score[found->second], figure);
            }
        }
    } catch (const PolygraphyException& error) {
        logger().warning(std::string("The debug diff replay could not rank the candidates (") + error.what() +
                         "): they are searched in graph order");
    }
    if (job.precision != LowPrecision::kInt8) inherit_scores_of_data_movement(reference.graph(), candidates, score);
    std::vector<std::size_t> order(candidates.size());
    for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return score[x] > score[y]; });
    return order;
}

std::vector<std::size_t> prefix(const std::vector<std::size_t>& order, std::size_t length) {
    return {order.begin(), order.begin() + static_cast<std::ptrdiff_t>(length)};
}

// Adaptive halving over `items` (ordered), as onnxconverter-common's auto_convert_mixed_precision
// does over graph order: the largest unresolved segment is given back to low precision together with
// the segments already given back (the others kept); one that passes is given back for good, one that
// fails is halved, down to single nodes, which are kept. Among equally large segments the last goes
// first when `last_first` (the least blamed of a ranking). Returns the kept items.
std::vector<std::size_t> segment_search(Evaluator& evaluator, const std::vector<std::size_t>& items, bool last_first) {
    struct Segment {
        std::size_t begin, end;
        enum { kUnknown, kGood, kBad } state = kUnknown;
    };
    std::vector<Segment> segments = {{0, items.size()}};
    auto kept_without = [&](const Segment* tried) {
        std::vector<std::size_t> kept;
        for (const Segment& segment : segments)
            if (&segment != tried && segment.state != Segment::kGood)
                for (std::size_t i = segment.begin; i < segment.end; ++i) kept.push_back(items[i]);
        return kept;
    };
    while (true) {
        Segment* largest = nullptr;
        for (Segment& segment : segments) {
            if (segment.state != Segment::kUnknown) continue;
            const std::size_t size = segment.end - segment.begin, best = largest ? largest->end - largest->begin : 0;
            if (!largest || size > best || (last_first && size == best)) largest = &segment;
        }
        if (!largest) break;
        if (evaluator.evaluate(kept_without(largest)).passed) {
            largest->state = Segment::kGood;
        } else if (largest->end - largest->begin == 1) {
            largest->state = Segment::kBad;
        } else {
            const std::size_t middle = largest->begin + (largest->end - largest->begin) / 2;
            const Segment second{middle, largest->end};
            largest->end = middle;
            segments.insert(segments.begin() + (largest - segments.data()) + 1, second);
        }
    }
    return kept_without(nullptr);
}

// The ranked search: the shortest prefix of `order` that passes (bisection or one more at a time; the
// empty prefix fails, the whole one passes), then segments of that prefix given back, least blamed
// first (segment_search), then single nodes until none can go alone. A node whose return failed is
// tried again only if the set has changed since, so that the last sweep checks 1-minimality.
std::vector<std::size_t> ranked_search(Evaluator& evaluator, const std::vector<std::size_t>& order,
                                       PrecisionSearch search) {
    std::size_t length = order.size();
    if (search == PrecisionSearch::kBisect) {
        std::size_t failing = 0;
        while (length - failing > 1) {
            const std::size_t middle = failing + (length - failing) / 2;
            if (evaluator.evaluate(prefix(order, middle)).passed)
                length = middle;
            else
                failing = middle;
        }
    } else {
        for (std::size_t k = 1; k < order.size(); ++k)
            if (evaluator.evaluate(prefix(order, k)).passed) {
                length = k;
                break;
            }
    }
    std::vector<std::size_t> kept = segment_search(evaluator, prefix(order, length), true);
    // segment_search() checked the kept set, but only as it was when each node was found.
    std::unordered_map<std::size_t, std::size_t> failed_at;  // node -> the set's version then
    std::size_t version = 0;
    if (!evaluator.evaluate(kept).passed) kept = prefix(order, length);  // not monotonic: start again from the prefix
    for (bool removed = true; removed;) {
        removed = false;
        for (std::size_t i = kept.size(); i-- > 0;) {
            if (const auto found = failed_at.find(kept[i]); found != failed_at.end() && found->second == version)
                continue;
            std::vector<std::size_t> without = kept;
            without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
            if (evaluator.evaluate(without).passed) {
                kept = std::move(without);
                ++version;
                removed = true;
            } else {
                failed_at[kept[i]] = version;
            }
        }
    }
    return kept;
}

// onnxconverter-common's auto_convert_mixed_precision, for comparison: segment_search() over the nodes
// in graph order, with no ranking and no 1-minimality; the final set is checked once more.
std::vector<std::size_t> node_order_search(Evaluator& evaluator, std::size_t count) {
    std::vector<std::size_t> items(count);
    for (std::size_t c = 0; c < count; ++c) items[c] = c;
    std::vector<std::size_t> kept = segment_search(evaluator, items, false);
    if (!evaluator.evaluate(kept).passed) logger().warning("The final set of the node-order search fails the check");
    return kept;
}

}  // namespace

std::vector<PrecisionCandidate> precision_candidates(onnx::ModelProto& model, LowPrecision precision,
                                                     const std::vector<std::string>& op_block_list) {
    onnx::GraphProto& graph = *model.mutable_graph();
    name_unnamed_nodes(graph);
    std::vector<PrecisionCandidate> candidates;
    if (precision == LowPrecision::kInt8) {
        std::unordered_set<std::string> weights, graph_outputs;
        for (const auto& initializer : graph.initializer()) weights.insert(initializer.name());
        for (const auto& output : graph.output()) graph_outputs.insert(output.name());
        std::unordered_map<std::string, std::vector<int>> readers;
        for (int n = 0; n < graph.node_size(); ++n)
            for (const auto& input : graph.node(n).input()) readers[input].push_back(n);
        for (const auto& node : graph.node()) {
            if (node.op_type() != "QuantizeLinear" || node.input_size() < 1 || node.output_size() < 1) continue;
            if (weights.contains(node.input(0)) || graph_outputs.contains(node.output(0))) continue;
            const auto found = readers.find(node.output(0));
            if (found == readers.end()) continue;
            PrecisionCandidate candidate{node.input(0), {node.name()}};
            bool all_dequantize = true;
            for (int reader : found->second) {
                const onnx::NodeProto& dq = graph.node(reader);
                all_dequantize = all_dequantize && dq.op_type() == "DequantizeLinear" && dq.input(0) == node.output(0);
                candidate.nodes.push_back(dq.name());
            }
            if (all_dequantize) candidates.push_back(std::move(candidate));
        }
        return candidates;
    }
    std::unordered_set<std::string> blocked(kFp16DefaultBlockList.begin(), kFp16DefaultBlockList.end());
    blocked.insert(op_block_list.begin(), op_block_list.end());
    const auto types = tensor_elem_types(model);
    const int64_t opset = get_onnx_opset(model);
    for (const auto& node : graph.node()) {
        if (!is_default_domain(node.domain()) || has_graph_attribute(node) || blocked.contains(node.op_type()))
            continue;
        if (node.op_type() == "Constant") continue;  // its value is converted; nothing computes
        // A node computes in low precision when it writes a float32 tensor (or one of unknown type).
        bool float_output = false;
        for (const auto& output : node.output()) {
            if (output.empty()) continue;
            const auto found = types.find(output);
            float_output = float_output || found == types.end() || found->second == onnx::TensorProto::FLOAT;
        }
        if (!float_output) continue;
        const std::string refusal =
            schema_refusal(node, opset, precision == LowPrecision::kBf16 ? "tensor(bfloat16)" : "tensor(float16)");
        if (!refusal.empty()) throw UsageError(refusal);
        candidates.push_back({node.name(), {node.name()}});
    }
    return candidates;
}

onnx::ModelProto mixed_precision_model(const onnx::ModelProto& model, LowPrecision precision,
                                       const std::vector<PrecisionCandidate>& candidates,
                                       const std::vector<std::string>& kept,
                                       const std::vector<std::string>& op_block_list) {
    onnx::ModelProto mixed = model;
    if (precision != LowPrecision::kInt8) {
        Fp16Options options;
        options.target = precision == LowPrecision::kBf16 ? DataType::kBFloat16 : DataType::kFloat16;
        options.op_block_list = op_block_list;
        options.node_block_list = kept;
        convert_to_fp16(mixed, options);
        return mixed;
    }
    // int8: each kept tensor's QuantizeLinear and DequantizeLinear nodes go; their readers read the
    // float tensor. A DequantizeLinear output that the graph yields becomes an Identity of it.
    const std::unordered_set<std::string> kept_labels(kept.begin(), kept.end());
    std::unordered_map<std::string, std::string> removed;  // a removed Q/DQ node's name -> the kept tensor
    for (const PrecisionCandidate& candidate : candidates)
        if (kept_labels.contains(candidate.label))
            for (const auto& name : candidate.nodes) removed.emplace(name, candidate.label);
    onnx::GraphProto& graph = *mixed.mutable_graph();
    std::unordered_map<std::string, std::string> float_of;  // a removed DequantizeLinear's output -> the tensor
    for (const auto& node : graph.node())
        if (const auto found = removed.find(node.name());
            found != removed.end() && node.op_type() == "DequantizeLinear")
            float_of[node.output(0)] = found->second;
    std::unordered_set<std::string> graph_outputs;
    for (const auto& output : graph.output()) graph_outputs.insert(output.name());
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Swap(graph.mutable_node());
    for (auto& node : nodes) {
        if (removed.contains(node.name())) {
            if (node.op_type() == "DequantizeLinear" && graph_outputs.contains(node.output(0))) {
                onnx::NodeProto identity;
                identity.set_op_type("Identity");
                identity.set_name(node.name());
                identity.add_input(float_of.at(node.output(0)));
                identity.add_output(node.output(0));
                *graph.add_node() = std::move(identity);
            }
            continue;
        }
        for (auto& input : *node.mutable_input())
            if (const auto found = float_of.find(input); found != float_of.end()) input = found->second;
        *graph.add_node() = std::move(node);
    }
    // Stale types of the removed tensors would contradict nothing, but value_info of them is dropped.
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> infos;
    infos.Swap(graph.mutable_value_info());
    for (auto& info : infos)
        if (!float_of.contains(info.name())) *graph.add_value_info() = std::move(info);
    return mixed;
}

PrecisionResult run_precision_job(const PrecisionJob& job) {
    const Clock::time_point start = Clock::now();
    onnx::ModelProto model = *build_model_loader(job.model)();
    if (calls_local_functions(model)) inline_local_functions(model);
    if (!job.op_block_list.empty()) {
        std::unordered_set<std::string> ops;
        for (const auto& node : model.graph().node()) ops.insert(node.op_type());
        for (const auto& op : job.op_block_list)
            if (!ops.contains(op))
                throw UsageError("The op block list names '" + op + "', which no node of the model is");
    }
    const std::vector<PrecisionCandidate> candidates = precision_candidates(model, job.precision, job.op_block_list);
    if (candidates.empty())
        throw UsageError(
            job.precision == LowPrecision::kInt8
                ? "The model has no activation quantized by a QuantizeLinear -> DequantizeLinear pair: "
                  "--precision int8 searches a QDQ model"
                : fmt::format("No node of the model computes in {}: nothing to search", precision_name(job.precision)));
    std::vector<std::string> all_labels;
    for (const auto& candidate : candidates) all_labels.push_back(candidate.label);

    // The samples, all of them: every evaluation checks each.
    InputList feeds;
    {
        const DataLoaderFn loader = build_data_loader(job.data_loader);
        const TensorMetadata inputs = get_onnx_input_metadata(model.graph());
        while (std::optional<TensorMap> feed = loader(feeds.size(), inputs)) feeds.push_back(std::move(*feed));
    }
    if (feeds.empty()) throw UsageError("The data loader gave no samples to check");

    PrecisionResult result;
    result.candidates = candidates.size();
    result.samples = feeds.size();
    logger().info(fmt::format(
        "Searching which of {} {} to keep in {} so that the {} model passes on {} sample(s)", candidates.size(),
        job.precision == LowPrecision::kInt8 ? "quantized activation(s)" : "node(s)",
        job.precision == LowPrecision::kInt8 ? "float" : "float32", precision_name(job.precision), feeds.size()));

    // The reference: the model itself (int8: without its activations' Q/DQ pairs).
    onnx::ModelProto reference;
    if (job.precision == LowPrecision::kInt8) {
        QuietInfo quiet;
        reference = mixed_precision_model(model, job.precision, candidates, all_labels);
    } else {
        reference = model;
    }
    Evaluator evaluator(job, model, candidates, feeds);
    evaluator.run_reference(reference);

    std::vector<std::size_t> all(candidates.size());
    for (std::size_t c = 0; c < all.size(); ++c) all[c] = c;
    std::vector<std::size_t> kept;
    if (evaluator.evaluate({}).passed) {
        logger().info(
            fmt::format("The {} model passes with nothing kept in higher precision", precision_name(job.precision)));
        result.one_minimal = true;
    } else if (job.search == PrecisionSearch::kNodeOrder) {
        kept = node_order_search(evaluator, candidates.size());
    } else {
        if (!evaluator.evaluate(all).passed)
            throw UsageError(fmt::format(
                "The check fails even with every candidate kept in higher precision ({}): the failure is not the "
                "{} conversion's; loosen the check or look at the ops kept by default",
                evaluator.history().back().failure, precision_name(job.precision)));

        const Clock::time_point ranking_start = Clock::now();
        onnx::ModelProto nothing_kept;
        {
            QuietInfo quiet;
            nothing_kept = mixed_precision_model(model, job.precision, candidates, {}, job.op_block_list);
        }
        const std::vector<std::size_t> order = rank_candidates(job, reference, nothing_kept, candidates, feeds);
        result.ranking_seconds = seconds_since(ranking_start);
        for (std::size_t c : order) result.ranking.push_back(candidates[c].label);
        logger().info(fmt::format("Ranked the candidates by local error (debug diff replay, {:.2f} s): {}",
                                  result.ranking_seconds, text::join_first(result.ranking, 5)));
        kept = ranked_search(evaluator, order, job.search);
        result.one_minimal = true;
    }

    std::sort(kept.begin(), kept.end());  // graph order
    std::vector<std::string> kept_labels;
    for (std::size_t c : kept) kept_labels.push_back(candidates[c].label);
    {
        QuietInfo quiet;
        result.mixed = mixed_precision_model(model, job.precision, candidates, kept_labels, job.op_block_list);
    }
    if (job.precision == LowPrecision::kInt8) {
        result.kept_tensors = kept_labels;
        std::set<std::string> readers;
        for (std::size_t c : kept)
            result.kept.insert(result.kept.end(), candidates[c].nodes.begin(), candidates[c].nodes.end());
        for (const auto& node : result.mixed.graph().node())
            for (const auto& input : node.input())
                if (std::find(kept_labels.begin(), kept_labels.end(), input) != kept_labels.end() &&
                    node.op_type() != "Identity")
                    readers.insert(node.name());
        result.block_lists.node_block_list.assign(readers.begin(), readers.end());
    } else {
        result.kept = kept_labels;
        result.block_lists.node_block_list = kept_labels;
        result.block_lists.op_block_list = kFp16DefaultBlockList;
        result.block_lists.op_block_list.insert(result.block_lists.op_block_list.end(), job.op_block_list.begin(),
                                                job.op_block_list.end());
    }
    result.history = evaluator.history();
    result.evaluations = result.history.size();
    if (job.output_path) {
        save_onnx(result.mixed, *job.output_path);
        logger().info("Saved the mixed-precision model to: " + *job.output_path);
    }
    if (job.block_list_path) {
        save_fp16_block_lists(result.block_lists, *job.block_list_path);
        logger().info("Saved the block lists to: " + *job.block_list_path);
    }
    result.seconds = seconds_since(start);
    return result;
}

std::string format_precision_result(const PrecisionResult& result, LowPrecision precision) {
    std::string text;
    if (result.kept.empty())
        text = fmt::format("Keep nothing in higher precision: the {} model passes as it is ({} candidate(s))",
                           precision_name(precision), result.candidates);
    else if (precision == LowPrecision::kInt8)
        text = fmt::format("Keep {} of {} activation(s) in float (their Q/DQ pairs removed): {}",
                           result.kept_tensors.size(), result.candidates, text::join_first(result.kept_tensors, 50));
    else
        text = fmt::format("Keep {} of {} node(s) in float32: {}", result.kept.size(), result.candidates,
                           text::join_first(result.kept, 50));
    if (precision == LowPrecision::kInt8 && !result.kept.empty())
        text += "\n    Q/DQ nodes removed: " + text::join_first(result.kept, 50);
    text += fmt::format("\n{} evaluation(s) on {} sample(s) each | {:.2f} s (ranking {:.2f} s)", result.evaluations,
                        result.samples, result.seconds, result.ranking_seconds);
    if (!result.kept.empty())
        text += result.one_minimal ? "\n1-minimal: each kept one, given back alone to low precision, fails the check"
                                   : "\nNot verified 1-minimal";
    return text;
}

}  // namespace polygraphy
