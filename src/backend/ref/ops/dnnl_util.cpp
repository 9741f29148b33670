#include "backend/ref/ops/dnnl_util.h"

#include <cstdlib>
#include <new>
#include <string>

#include "polygraphy/common/exception.h"

namespace polygraphy::ref::onednn {

const dnnl::engine& cpu_engine() {
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

int resolve_threads(int requested) { return requested > 0 ? requested : std::max(omp_get_max_threads(), 1); }

ThreadScope::ThreadScope(int num_threads) : previous_(omp_get_max_threads()) {
    omp_set_num_threads(resolve_threads(num_threads));
}

ThreadScope::~ThreadScope() { omp_set_num_threads(previous_); }

dnnl::memory::dims to_dims(const Shape& shape) { return dnnl::memory::dims(shape.begin(), shape.end()); }

dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims) {
    dnnl::memory::dims strides(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
    return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory wrap_memory(const dnnl::memory::desc& desc, const void* data) {
    return dnnl::memory(desc, cpu_engine(), const_cast<void*>(data));
}

void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
    dnnl::stream stream(cpu_engine());
    prim.execute(stream, args);
    stream.wait();
}

std::shared_ptr<void> aligned_buffer(std::size_t bytes) {
    void* data = std::aligned_alloc(64, std::max<std::size_t>((bytes + 63) / 64 * 64, 64));
    if (data == nullptr) throw std::bad_alloc();
    return std::shared_ptr<void>(data, [](void* p) { std::free(p); });
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

void fail_dtype(const NodeInfo& node, const std::string& what, DataType dtype, const std::string& allowed) {
    throw UnsupportedError("Node '" + node.name() + "' (" + node.op_type() + "): " + what +
                           " has unsupported data type " + std::string(dtype_name(dtype)) + "\nNote: supported: " +
                           allowed);
}

void rethrow_dnnl_error(const NodeInfo& node, const dnnl::error& error, const char* what) {
    throw UnsupportedError("Node '" + node.name() + "' (" + node.op_type() + "): oneDNN could not " + what + ": " +
                           error.what());
}

const void* PackedWeights::get(const dnnl::memory::desc& plain_desc, const void* plain_data,
                               const dnnl::memory::desc& packed_desc) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [desc, buffer] : packed_) {
        if (desc == packed_desc) return buffer.get();
    }
    packed_.emplace_back(packed_desc, reorder_to_new_buffer(plain_desc, plain_data, packed_desc));
    return packed_.back().second.get();
}

}  // namespace polygraphy::ref::onednn
