// Session: runs a graph prepared by session_prepare.cpp and planned by session_plan.cpp.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <vector>

#include <dnnl.h>

#include "backend/onnx/domain.h"
#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/session_impl.h"
#include "backend/ref/thread_budget.h"
#include "polygraphy/common/logger.h"

namespace polygraphy::ref {

Session::Session(const onnx::ModelProto& model, SessionOptions options, const TensorMap& constants)
    : impl_(std::make_unique<Impl>()) {
    impl_->prepare(model, options, constants);
}

Session::~Session() = default;

const TensorMetadata& Session::input_metadata() const {
    return impl_->input_metadata;
}
const TensorMetadata& Session::output_metadata() const {
    return impl_->output_metadata;
}
const std::vector<std::string>& Session::execution_order() const {
    return impl_->order;
}
int Session::num_threads() const {
    return impl_->num_threads;
}

namespace {

/// A fused operator (fused_ops.h) named by the standard operators it computes, as the profile shows
/// it: FusedConv with a residual and Relu is "Conv+Add+Relu", a blocked MaxPool "MaxPool".
std::string folded_work(const onnx::NodeProto& node) {
    const std::string_view domain = canonical_domain(node.domain());
    const std::string& op = node.op_type();
    if (domain == kRuntimeDomain && op.starts_with("Blocked")) return op.substr(7);
    if ((domain != kRuntimeDomain && domain != kMicrosoftDomain) || !op.starts_with("Fused")) return op;
    std::string work = op.substr(5);
    // The input past the standard operator's: FusedConv's residual, FusedMatMul's bias.
    const int standard_inputs = work == "Conv" ? 3 : work == "MatMul" ? 2 : node.input_size();
    if (node.input_size() > standard_inputs && !node.input(standard_inputs).empty()) work += "+Add";
    for (const auto& attr : node.attribute())
        if (attr.name() == kActivationAttr && !attr.s().empty()) work += "+" + attr.s();
    return work;
}

/// The floating-point operations of one run of a product node (2 per multiply-add), from its inputs
/// and output; 0 for other operators. A channel-blocked tensor's padding counts as channels.
double product_flops(const onnx::NodeProto& node, const std::vector<const Tensor*>& inputs, const Tensor& output) {
    const std::string work = folded_work(node);
    const std::string op = work.substr(0, work.find('+'));
    const Tensor* a = inputs.empty() ? nullptr : inputs[0];
    const Tensor* w = inputs.size() > 1 ? inputs[1] : nullptr;
    if (a == nullptr || !a->defined() || !output.defined() || a->rank() < 1) return 0;
    const auto out = static_cast<double>(output.numel());
    if (op == "MatMul" || op == "MatMulNBits" || op == "MatMulInteger")
        return 2.0 * out * static_cast<double>(a->shape().back());
    if (op == "Gemm" && a->rank() == 2) {
        bool trans_a = false;
        for (const auto& attr : node.attribute())
            if (attr.name() == "transA") trans_a = attr.i() != 0;
        return 2.0 * out * static_cast<double>(a->shape()[trans_a ? 0 : 1]);
    }
    if (w == nullptr || !w->defined() || w->rank() < 3 || w->shape()[0] == 0) return 0;
    const auto per_output = static_cast<double>(w->numel() / w->shape()[0]);
    if (op == "Conv") return 2.0 * out * per_output;  // each output: C/group x kernel taps
    if (op == "ConvTranspose") return 2.0 * static_cast<double>(a->numel()) * per_output;
    return 0;
}

/// oneDNN's sgemm at 1 thread, the best of a few runs of 512 x 512 x 512.
double measure_sgemm_peak_gflops() {
    if (const char* given = std::getenv("POLYGRAPHY_SGEMM_PEAK_GFLOPS")) {
        char* end = nullptr;
        const double value = std::strtod(given, &end);
        if (end != given && *end == '\0' && value > 0) return value;
        logger().warning(fmt::format("POLYGRAPHY_SGEMM_PEAK_GFLOPS='{}' is not a positive number: measuring", given));
    }
    constexpr int64_t kSize = 512;
    std::vector<float> a(kSize * kSize, 0.5f), b(kSize * kSize, 0.25f), c(kSize * kSize);
    const onednn::ThreadScope one_thread(1);
    double best = 0;
    for (int run = 0; run < 6; ++run) {
        const auto start = std::chrono::steady_clock::now();
        dnnl_sgemm('N', 'N', kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(), kSize, 0.0f, c.data(), kSize);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (run > 0 && seconds > 0) best = std::max(best, 2.0 * kSize * kSize * kSize / seconds / 1e9);
    }
    return best;
}

}  // namespace

std::optional<SessionProfile> Session::profile() const {
    const Impl& impl = *impl_;
    if (!impl.profile) return std::nullopt;
    std::lock_guard<std::mutex> lock(impl.profile_totals.mutex);
    SessionProfile result;
    result.runs = impl.profile_totals.runs_seen > 0 ? impl.profile_totals.runs_seen - 1 : 0;
    result.total_seconds = impl.profile_totals.total_seconds;
    result.threads = impl.profile_totals.threads;
    static const double peak = measure_sgemm_peak_gflops();
    result.peak_gflops = peak;
    for (std::size_t i = 0; i < impl.steps.size(); ++i) {
        const NodeInfo& info = *impl.steps[i].info;
        std::string op_type = folded_work(info.proto());
        const auto& seconds = impl.profile_totals.step_seconds;
        const auto& flops = impl.profile_totals.step_flops;
        result.nodes.push_back({impl.order[i], std::move(op_type), i < seconds.size() ? seconds[i] : 0.0,
                                i < flops.size() ? flops[i] : 0.0});
    }
    return result;
}

std::string format_profile(const SessionProfile& profile, std::size_t max_nodes) {
    if (profile.runs == 0) return "Profile: no run counted (the first run, which prepares the kernels, is not)";
    const double runs = static_cast<double>(profile.runs);
    double nodes_total = 0;
    for (const auto& node : profile.nodes) nodes_total += node.seconds;
    auto percent = [&](double seconds) { return nodes_total > 0 ? 100.0 * seconds / nodes_total : 0.0; };
    std::string text = fmt::format(
        "Profile of {} run(s) (the first run is not counted): {:.3f} ms per run, {:.3f} ms of it in {} nodes\n",
        profile.runs, profile.total_seconds / runs * 1e3, nodes_total / runs * 1e3, profile.nodes.size());

    struct OpTotal {
        std::size_t nodes = 0;
        double seconds = 0;
    };
    std::map<std::string, OpTotal> by_op;
    for (const auto& node : profile.nodes) {
        OpTotal& total = by_op[node.op_type];
        ++total.nodes;
        total.seconds += node.seconds;
    }
    std::vector<std::pair<std::string, OpTotal>> ops(by_op.begin(), by_op.end());
    std::stable_sort(ops.begin(), ops.end(),
                     [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    std::size_t op_width = 7;
    for (const auto& [op, total] : ops) op_width = std::max(op_width, op.size());
    text += fmt::format("  By op type:\n    {:<{}}  {:>5}  {:>11}  {:>6}\n", "op type", op_width, "nodes", "ms per run",
                        "share");
    for (const auto& [op, total] : ops)
        text += fmt::format("    {:<{}}  {:>5}  {:>11.3f}  {:>5.1f}%\n", op, op_width, total.nodes,
                            total.seconds / runs * 1e3, percent(total.seconds));

    std::vector<const SessionProfile::Node*> slowest;
    for (const auto& node : profile.nodes) slowest.push_back(&node);
    std::stable_sort(slowest.begin(), slowest.end(),
                     [](const auto* a, const auto* b) { return a->seconds > b->seconds; });
    if (slowest.size() > max_nodes) slowest.resize(max_nodes);
    std::size_t name_width = 4, type_width = 7;
    for (const auto* node : slowest) {
        name_width = std::max(name_width, node->name.size());
        type_width = std::max(type_width, node->op_type.size());
    }
    // A product's rate, and its share of the float32 limit of the cores the run used.
    const double limit = profile.peak_gflops * std::max(profile.threads, 1);
    text += fmt::format(
        "  Slowest nodes ({} of {}), each product's rate against the float32 limit of {} thread(s), "
        "{:.0f} GFLOP/s (oneDNN's sgemm: {:.0f} on one core):\n"
        "    {:<{}}  {:<{}}  {:>11}  {:>6}  {:>8}  {:>7}",
        slowest.size(), profile.nodes.size(), profile.threads, limit, profile.peak_gflops, "node", name_width,
        "op type", type_width, "ms per run", "share", "GFLOP/s", "of peak");
    for (const auto* node : slowest) {
        text += fmt::format("\n    {:<{}}  {:<{}}  {:>11.3f}  {:>5.1f}%", node->name, name_width, node->op_type,
                            type_width, node->seconds / runs * 1e3, percent(node->seconds));
        if (node->flops > 0 && node->seconds > 0) {
            const double gflops = node->flops / node->seconds / 1e9;
            text += fmt::format("  {:>8.1f}", gflops);
            if (limit > 0) text += fmt::format("  {:>6.0f}%", 100.0 * gflops / limit);
        }
    }
    return text;
}

TensorMap Session::run(const TensorMap& feed) const {
    return run(feed, nullptr);
}

TensorMap Session::run(const TensorMap& feed, RunStats* stats) const {
    ValueMap values;
    for (const auto& [name, tensor] : feed) values.set(name, Value(tensor));
    ValueMap results = run_values(values, stats);
    TensorMap tensors;
    for (auto& [name, value] : results) {
        if (!value.is_tensor())
            throw UnsupportedError(fmt::format("Graph output '{}' is a {}, but this runner returns tensors only", name,
                                               value.kind_name()));
        tensors.set(name, value.tensor());
    }
    return tensors;
}

Session::ValueMap Session::run_values(const ValueMap& feed, RunStats* stats) const {
    const Impl& impl = *impl_;
    const int threads = impl.adaptive_threads ? threads_for_current_load(impl.num_threads) : impl.num_threads;
    omp_set_num_threads(threads);

    std::vector<Value> values(impl.slot_names.size());
    for (const auto& [name, index] : impl.inputs) {
        if (const Value* given = feed.find(name); given && given->defined())
            values[index] = *given;
        else if (impl.defaults[index].defined())
            values[index] = impl.defaults[index];
        else
            throw InputError(fmt::format("Input '{}' is missing from the feed", name));
    }
    {
        std::optional<RunArena::Scope> planned;
        if (impl.arena) planned.emplace(*impl.arena);
        impl.execute(values, stats, threads);
    }
    ValueMap result;
    for (const auto& [name, index] : impl.outputs) result.set(name, impl.value_at(values, index));
    return result;
}

void Session::Impl::execute(std::vector<Value>& values, RunStats* stats, int threads) const {
    using Clock = std::chrono::steady_clock;
    RunStats local;
    std::size_t live = 0;
    std::vector<double> step_seconds(profile ? steps.size() : 0), step_flops(profile ? steps.size() : 0);
    const Clock::time_point run_start = profile ? Clock::now() : Clock::time_point();
    std::vector<const Tensor*> inputs;
    std::vector<const Value*> input_values;
    std::vector<Tensor> concat_outputs(concats_in_place.size());  // allocated by the first producer's step
    for (std::size_t step_index = 0; step_index < steps.size(); ++step_index) {
        const Step& step = steps[step_index];
        inputs.clear();
        input_values.clear();
        for (int index : step.inputs) {
            if (index < 0) {
                inputs.push_back(nullptr);
                input_values.push_back(nullptr);
                continue;
            }
            const Value& input = value_at(values, index);
            input_values.push_back(&input);
            inputs.push_back(input.is_tensor() ? &input.tensor() : nullptr);
        }
        KernelContext context(*step.info, inputs, step.outputs.size(), threads);
        context.attach_values(&input_values, &step.outer_names);
        context.attach_donatable(&step.donatable);
        if (step.feeds_concat >= 0) offer_concat_slice(step, concat_outputs, context);
        if (step.concat_in_place >= 0 && concat_outputs[step.concat_in_place].defined())
            context.offer_output(0, concat_outputs[step.concat_in_place]);
        if (logger().enabled(Severity::kUltraVerbose))
            logger().ultra_verbose(fmt::format("Running node '{}' ({})", step.info->name(), step.info->op_type()));
        const Clock::time_point step_start = profile ? Clock::now() : Clock::time_point();
        with_node_context(*step.info, [&] { step.kernel->compute(context); });
        if (profile) {
            step_seconds[step_index] = std::chrono::duration<double>(Clock::now() - step_start).count();
            if (step.outputs.size() == 1)
                step_flops[step_index] = product_flops(step.info->proto(), inputs, context.output(0));
        }
        if (step.concat_in_place >= 0) {
            Tensor& offered = concat_outputs[step.concat_in_place];
            const Tensor& result = context.output(0);
            if (offered.defined() && result.defined() && result.data() == offered.data()) ++local.concats_in_place;
            offered = Tensor();  // the output holds it now, if it took it
            record_concat_shapes(*concats_in_place[step.concat_in_place], inputs, result);
        }
        for (std::size_t j = 0; j < step.outputs.size(); ++j) {
            const int index = step.outputs[j];
            if (index < 0) continue;
            Value produced = context.take_output_value(j);
            if (!produced.defined())
                step.info->fail(fmt::format("produced no value for output '{}'", slot_names[index]));
            values[index] = std::move(produced);
            ++live;
        }
        local.peak_live_intermediates = std::max(local.peak_live_intermediates, live);
        ++local.nodes_executed;
        for (int index : step.release) {
            values[index] = Value();
            --live;
        }
    }
    if (stats) *stats = local;
    if (profile)
        record_profile(step_seconds, step_flops, std::chrono::duration<double>(Clock::now() - run_start).count(),
                       threads);
}

void Session::Impl::offer_concat_slice(const Step& step, std::vector<Tensor>& concat_outputs,
                                       KernelContext& context) const {
    const ConcatInPlace& plan = *concats_in_place[step.feeds_concat];
    DataType dtype;
    Shape output, slice;
    std::size_t offset = 0;  // bytes
    {
        std::lock_guard<std::mutex> lock(plan.mutex);
        if (plan.input_shapes.empty()) return;
        dtype = plan.dtype;
        output = plan.output;
        slice = plan.input_shapes[step.concat_input];
        for (std::size_t i = 0; i < step.concat_input; ++i)
            offset += shape_volume(plan.input_shapes[i]) * dtype_size(dtype);
    }
    Tensor& whole = concat_outputs[step.feeds_concat];
    if (!whole.defined()) whole = Tensor::uninitialized(dtype, output);
    auto holder = std::make_shared<Tensor>(whole);
    std::shared_ptr<void> owner(holder, holder->data());
    context.offer_output(0, Tensor::wrap(dtype, slice, owner, static_cast<uint8_t*>(holder->data()) + offset));
}

void Session::Impl::record_concat_shapes(const ConcatInPlace& plan, const std::vector<const Tensor*>& inputs,
                                         const Tensor& output) const {
    bool usable = output.defined() && output.dtype() != DataType::kString;
    if (usable) {  // one slice per input: the dims before the axis are 1
        const int64_t rank = output.rank();
        const int64_t axis = plan.axis < 0 ? plan.axis + rank : plan.axis;
        for (int64_t d = 0; d < axis && d < rank; ++d) usable = usable && output.shape()[d] == 1;
    }
    std::lock_guard<std::mutex> lock(plan.mutex);
    plan.input_shapes.clear();
    if (!usable) return;
    for (const Tensor* input : inputs) {
        if (input == nullptr || !input->defined()) {
            plan.input_shapes.clear();
            return;
        }
        plan.input_shapes.push_back(input->shape());
    }
    plan.dtype = output.dtype();
    plan.output = output.shape();
}

void Session::Impl::record_profile(const std::vector<double>& step_seconds, const std::vector<double>& step_flops,
                                   double total_seconds, int threads) const {
    std::lock_guard<std::mutex> lock(profile_totals.mutex);
    if (profile_totals.runs_seen++ == 0) return;
    if (profile_totals.step_seconds.empty()) {
        profile_totals.step_seconds.assign(step_seconds.size(), 0.0);
        profile_totals.step_flops.assign(step_flops.size(), 0.0);
    }
    for (std::size_t i = 0; i < step_seconds.size(); ++i) {
        profile_totals.step_seconds[i] += step_seconds[i];
        profile_totals.step_flops[i] += step_flops[i];
    }
    profile_totals.total_seconds += total_seconds;
    profile_totals.threads = threads;
}

std::shared_ptr<Session> SessionFromOnnx::operator()() const {
    OnnxModel model = model_();
    if (!model) throw PolygraphyException("SessionFromOnnx: the model loader returned no model");
    return std::make_shared<Session>(*model, options_);
}

std::shared_ptr<Session> session_from_onnx(const onnx::ModelProto& model, SessionOptions options) {
    return std::make_shared<Session>(model, options);
}

}  // namespace polygraphy::ref
