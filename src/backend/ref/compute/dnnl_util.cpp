#include "backend/ref/compute/dnnl_util.h"

#include <cmath>
#include <limits>

#include <cstdlib>
#include <new>

#include <omp.h>
#include <string>

#include <fmt/format.h>

#include "backend/ref/compute/vector_math.h"
#include "backend/ref/fused_ops.h"
#include "common/aligned_memory.h"
#include "polygraphy/common/exception.h"

namespace polygraphy::ref::onednn {

const dnnl::engine& cpu_engine() {
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

int resolve_threads(int requested) {
    return requested > 0 ? requested : std::max(omp_get_max_threads(), 1);
}

ThreadScope::ThreadScope(int num_threads) : previous_(omp_get_max_threads()) {
    omp_set_num_threads(resolve_threads(num_threads));
}

ThreadScope::~ThreadScope() {
    omp_set_num_threads(previous_);
}

dnnl::memory::dims to_dims(const Shape& shape) {
    return dnnl::memory::dims(shape.begin(), shape.end());
}

dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims) {
    dnnl::memory::dims strides(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
    return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory::desc blocked_desc(const dnnl::memory::dims& dims, int64_t block) {
    return dnnl::memory::desc(
        dims, dnnl::memory::data_type::f32,
        block == kWideChannelBlock ? dnnl::memory::format_tag::nChw16c : dnnl::memory::format_tag::nChw8c);
}

Shape blocked_shape(const Shape& shape, int64_t block) {
    return {shape[0], (shape[1] + block - 1) / block, shape[2], shape[3], block};
}

Shape unblocked_shape(const NodeInfo& node, const Tensor& tensor, int64_t block, int64_t channels) {
    const Shape& shape = tensor.shape();
    if (tensor.dtype() != DataType::kFloat32 || shape.size() != 5 || shape[4] != block ||
        (channels >= 0 && shape[1] != (channels + block - 1) / block))
        throw InternalError(
            fmt::format("Node '{}' ({}): expected a channel-blocked float32 input [N, C/{}, H, W, {}]{}, "
                        "got {} {}",
                        node.name(), node.op_type(), block, block,
                        channels >= 0 ? fmt::format(" of {} channels", channels) : std::string(),
                        dtype_name(tensor.dtype()), shape_to_string(shape)));
    return {shape[0], channels >= 0 ? channels : shape[1] * block, shape[2], shape[3]};
}

int64_t channel_block(const NodeInfo& node, std::string_view name) {
    const int64_t value = node.attr_int(name, 0);
    if (value != 0 && value != kNarrowChannelBlock && value != kWideChannelBlock)
        node.fail(fmt::format("attribute '{}' must be 0, {} or {}, but it is {}", name, kNarrowChannelBlock,
                              kWideChannelBlock, value));
    return value;
}

dnnl::memory wrap_memory(const dnnl::memory::desc& desc, const void* data) {
    return dnnl::memory(desc, cpu_engine(), const_cast<void*>(data));
}

void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
    dnnl::stream stream(cpu_engine());
    prim.execute(stream, args);
    stream.wait();
}

void add_thread_scratchpad(std::unordered_map<int, dnnl::memory>& args, const dnnl::memory::desc& scratchpad) {
    if (const std::size_t bytes = scratchpad.get_size())
        args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, cpu_engine(), thread_scratch(3, bytes)));
}

std::shared_ptr<void> aligned_buffer(std::size_t bytes) {
    std::shared_ptr<void> data = allocate_aligned(bytes);
    if (data == nullptr) throw std::bad_alloc();
    return data;
}

std::shared_ptr<void> reorder_to_new_buffer(const dnnl::memory::desc& src_desc, const void* src,
                                            const dnnl::memory::desc& dst_desc) {
    std::shared_ptr<void> buffer = aligned_buffer(dst_desc.get_size());
    dnnl::memory src_memory = wrap_memory(src_desc, src);
    dnnl::memory dst_memory(dst_desc, cpu_engine(), buffer.get());
    execute(dnnl::reorder(src_memory, dst_memory), {{DNNL_ARG_FROM, src_memory}, {DNNL_ARG_TO, dst_memory}});
    return buffer;
}

void* thread_scratch(int slot, std::size_t bytes) {
    struct Slot {
        std::shared_ptr<void> data;
        std::size_t size = 0;
    };
    thread_local Slot slots[4];
    Slot& entry = slots[slot];
    if (entry.size < bytes) {
        entry.data.reset();
        entry.data = aligned_buffer(bytes);
        entry.size = bytes;
    }
    return entry.data.get();
}

void parallel_chunks(int64_t count, int threads, const std::function<void(int64_t, int64_t)>& body) {
#pragma omp parallel num_threads(threads)
    {
        const int64_t t = omp_get_thread_num();
        const int64_t nt = omp_get_num_threads();
        const int64_t chunk = count / nt;
        const int64_t extra = count % nt;
        const int64_t begin = t * chunk + std::min(t, extra);
        const int64_t end = begin + chunk + (t < extra ? 1 : 0);
        if (begin < end) body(begin, end);
    }
}

void fail_dtype(const NodeInfo& node, const std::string& what, DataType dtype, const std::string& allowed) {
    throw UnsupportedError("Node '" + node.name() + "' (" + node.op_type() + "): " + what +
                           " has unsupported data type " + std::string(dtype_name(dtype)) +
                           "\nNote: supported: " + allowed);
}

void rethrow_dnnl_error(const NodeInfo& node, const dnnl::error& error, const char* what) {
    throw UnsupportedError("Node '" + node.name() + "' (" + node.op_type() + "): oneDNN could not " + what + ": " +
                           error.what());
}

bool FusedActivation::takes(std::string_view name) {
    return name == "Relu" || name == "Clip" || name == "Gelu" || name == "Silu";
}

FusedActivation::FusedActivation(const NodeInfo& node) {
    const std::string name = node.attr_string(kActivationAttr, "");
    if (name.empty()) return;
    if (name == "Relu") {
        kind_ = Kind::kRelu;
    } else if (name == "Gelu") {
        kind_ = Kind::kGelu;
    } else if (name == "Silu") {
        kind_ = Kind::kSilu;
    } else if (name == "Clip") {
        kind_ = Kind::kClip;
        const std::vector<float> bounds = node.attr_floats(kActivationParamsAttr, {});
        if (!bounds.empty() && bounds.size() != 2)
            node.fail(fmt::format("attribute '{}' of Clip must hold 2 values (min, max), but it holds {}",
                                  kActivationParamsAttr, bounds.size()));
        min_ = bounds.empty() ? -std::numeric_limits<float>::infinity() : bounds[0];
        max_ = bounds.empty() ? std::numeric_limits<float>::infinity() : bounds[1];
    } else {
        node.fail("attribute '" + std::string(kActivationAttr) + "' has an unknown value '" + name +
                  "'\nNote: allowed values are Relu, Gelu, Silu, Clip");
    }
    switch (kind_) {
        case Kind::kRelu:
            eltwise_ = std::make_shared<Eltwise>(dnnl::algorithm::eltwise_relu);
            break;
        case Kind::kClip:
            eltwise_ = std::make_shared<Eltwise>(dnnl::algorithm::eltwise_clip, min_, max_);
            break;
        case Kind::kGelu:
            eltwise_ = std::make_shared<Eltwise>(dnnl::algorithm::eltwise_gelu_erf);
            break;
        case Kind::kSilu:
            eltwise_ = std::make_shared<Eltwise>(dnnl::algorithm::eltwise_swish, 1.0f);
            break;
        case Kind::kNone:
            break;
    }
}

void FusedActivation::append_to(dnnl::post_ops& ops) const {
    switch (kind_) {
        case Kind::kRelu:
            ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
            break;
        case Kind::kClip:
            ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, min_, max_);
            break;
        case Kind::kGelu:
            ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
            break;
        case Kind::kSilu:
            ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
            break;
        case Kind::kNone:
            break;
    }
}

double FusedActivation::apply(double x) const {
    switch (kind_) {
        // NaN -> 0 and -> the lower bound, like the oneDNN post-ops (documented with kActivationAttr).
        case Kind::kRelu:
            return x > 0.0 ? x : 0.0;
        case Kind::kClip:
            return std::isnan(x) ? static_cast<double>(min_)
                                 : std::min(std::max(x, static_cast<double>(min_)), static_cast<double>(max_));
        case Kind::kGelu:
            return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
        case Kind::kSilu:
            return x / (1.0 + std::exp(-x));
        case Kind::kNone:
            break;
    }
    return x;
}

void FusedActivation::apply_in_place(Tensor& tensor, int num_threads) const {
    if (!active()) return;
    auto run = [&](auto* data) {
        using T = std::remove_pointer_t<decltype(data)>;
        parallel_for(tensor.numel(), num_threads, 8, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) data[i] = static_cast<T>(apply(static_cast<double>(data[i])));
        });
    };
    if (tensor.dtype() == DataType::kFloat64) {
        run(tensor.data_as<double>());
    } else if (tensor.dtype() == DataType::kFloat32) {
        float* data = tensor.data_as<float>();
        if (kind_ == Kind::kSilu) {  // our exp is about twice as fast as oneDNN's swish here
            parallel_for(tensor.numel(), num_threads, 16,
                         [&](int64_t begin, int64_t end) { silu_in_place(data + begin, end - begin); });
        } else if (!eltwise_ || !eltwise_->run(data, data, tensor.numel(), num_threads)) {
            run(data);
        }
    } else {
        throw InternalError("FusedActivation::apply_in_place on " + std::string(dtype_name(tensor.dtype())));
    }
}

bool Eltwise::run(const float* x, float* y, int64_t count, int num_threads) const {
    if (count <= 0) return true;
    const int threads = resolve_threads(num_threads);
    ThreadScope scope(threads);
    auto plan = cache_.get({count, threads}, [&]() -> std::shared_ptr<const Plan> {
        auto plan = std::make_shared<Plan>();
        plan->desc = plain_desc({count});
        try {
            dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm_, plan->desc, alpha_, beta_);
            plan->primitive = dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(desc, cpu_engine()));
        } catch (const dnnl::error&) {
            return nullptr;
        }
        return plan;
    });
    if (plan == nullptr) return false;
    execute(plan->primitive, {{DNNL_ARG_SRC, wrap_memory(plan->desc, x)}, {DNNL_ARG_DST, wrap_memory(plan->desc, y)}});
    return true;
}

const void* PackedWeights::get(const dnnl::memory::desc& plain_desc, const void* plain_data,
                               const dnnl::memory::desc& packed_desc) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Packed& packed : packed_)
        if (packed.desc == packed_desc && packed.source == plain_data) return packed.buffer.get();
    packed_.push_back({packed_desc, plain_data, reorder_to_new_buffer(plain_desc, plain_data, packed_desc)});
    return packed_.back().buffer.get();
}

}  // namespace polygraphy::ref::onednn

namespace polygraphy::ref {

int64_t widest_channel_block() {
    // The bits of avx512_core, so that an ISA with a larger value but without AVX-512 (avx2_vnni)
    // does not count; get_effective_cpu_isa() honours ONEDNN_MAX_CPU_ISA.
    static const int64_t block = [] {
        const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
        return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & avx512) == avx512 ? kWideChannelBlock
                                                                                         : kNarrowChannelBlock;
    }();
    return block;
}

}  // namespace polygraphy::ref
