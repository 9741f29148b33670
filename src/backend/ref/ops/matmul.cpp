// MatMul (numpy semantics) and Gemm. float32 (and float16/bfloat16, computed in float32) run on the
// oneDNN matmul primitive, except a product with a constant right-hand matrix (an initializer: the
// usual Linear/Gemm weight), which the runtime's own GEMM runs on AVX2 CPUs with the matrix packed
// once (packed_gemm.h). Other types use a plain loop.
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/onnx/domain.h"
#include "backend/ref/compute/contrib_activation.h"
#include "backend/ref/compute/dnnl_util.h"
#include "backend/ref/compute/packed_gemm.h"
#include "backend/ref/ops/families.h"

namespace polygraphy::ref {
namespace {


bool is_half_type(DataType dtype) { return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16; }

/// Accumulator of a product: integers wrap (numpy semantics) through their unsigned twin, which
/// keeps the overflow defined.
template <typename T, bool = std::is_integral_v<T>>
struct WrapType {
    using type = T;
};
template <typename T>
struct WrapType<T, true> {
    using type = std::make_unsigned_t<T>;
};

/// A 2-D operand view: element (r, c) is at data[r * row_stride + c * col_stride].
template <typename T>
struct MatrixView {
    const T* data;
    int64_t row_stride;
    int64_t col_stride;
    T at(int64_t r, int64_t c) const { return data[r * row_stride + c * col_stride]; }
};

/// y (M x N, dense) = a (M x K) * b (K x N), accumulating in T (integers wrap like numpy).
template <typename T>
void naive_matmul(int64_t m, int64_t n, int64_t k, MatrixView<T> a, MatrixView<T> b, T* y, int threads) {
    using Acc = typename WrapType<T>::type;
    onednn::parallel_for(m, threads, n * k, [&](int64_t begin, int64_t end) {
        std::vector<Acc> row(static_cast<std::size_t>(n));
        for (int64_t i = begin; i < end; ++i) {
            std::fill(row.begin(), row.end(), Acc{0});
            for (int64_t p = 0; p < k; ++p) {
                const Acc av = static_cast<Acc>(a.at(i, p));
                const T* b_row = b.data + p * b.row_stride;
                for (int64_t j = 0; j < n; ++j) row[static_cast<std::size_t>(j)] += av * static_cast<Acc>(b_row[j * b.col_stride]);
            }
            for (int64_t j = 0; j < n; ++j) y[i * n + j] = static_cast<T>(row[static_cast<std::size_t>(j)]);
        }
    });
}

// ---- oneDNN plans -----------------------------------------------------------------------------------

struct DnnlMatmulPlan {
    dnnl::matmul primitive;
    dnnl::memory::desc src, weights_plain, weights, dst;
    dnnl::memory::desc bias;        ///< zero (no bias) unless the plan adds one
    dnnl::memory::desc scratchpad;  ///< the caller passes it (onednn::add_thread_scratchpad)
};

/// Creates a matmul plan; `weights_any` lets oneDNN choose the weights layout (for packed constants);
/// `bias` (a zero desc for none) is added to every row. Returns nullptr when oneDNN refuses the problem.
std::shared_ptr<const DnnlMatmulPlan> make_matmul_plan(const dnnl::memory::desc& src, const dnnl::memory::desc& weights_plain,
                                                       const dnnl::memory::desc& dst, bool weights_any, float alpha,
                                                       bool accumulate, const onednn::FusedActivation& activation,
                                                       const dnnl::memory::desc& bias = {}) {
    auto plan = std::make_shared<DnnlMatmulPlan>();
    plan->src = src;
    plan->weights_plain = weights_plain;
    plan->dst = dst;
    plan->bias = bias;
    // Packed constant weights are stored transposed (N x K, "ba"): oneDNN's GEMM runs the encoder's
    // wide products faster that way than on the K x N layout that format_tag::any picks, and no
    // slower on the square and narrow ones (BENCHMARKS.md).
    const bool matrix = weights_plain.dims().size() == 2;
    const dnnl::memory::desc weights_desc =
        weights_any ? dnnl::memory::desc(weights_plain.dims(), dnnl::memory::data_type::f32,
                                         matrix ? dnnl::memory::format_tag::ba : dnnl::memory::format_tag::any)
                    : weights_plain;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one plan runs on several threads at once
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (accumulate || activation.active()) {
        dnnl::post_ops ops;
        if (accumulate) ops.append_sum(1.0f);  // y = alpha * A @ B + y (y holds beta * C)
        activation.append_to(ops);
        attr.set_post_ops(ops);
    }
    try {
        const dnnl::matmul::desc desc =
            bias.is_zero() ? dnnl::matmul::desc(src, weights_desc, dst) : dnnl::matmul::desc(src, weights_desc, bias, dst);
        dnnl::matmul::primitive_desc pd(desc, attr, onednn::cpu_engine());
        plan->weights = pd.weights_desc();
        plan->scratchpad = pd.scratchpad_desc();
        plan->primitive = dnnl::matmul(pd);
    } catch (const dnnl::error&) {
        return nullptr;
    }
    return plan;
}

/// Runs a plan. `packed` (may be null) holds the constant weights' packed copies; `bias` is read
/// when the plan has one.
void run_matmul_plan(const DnnlMatmulPlan& plan, const void* a, const void* b, void* y,
                     const onednn::PackedWeights* packed, const void* bias = nullptr) {
    dnnl::memory weights;
    if (packed != nullptr && plan.weights != plan.weights_plain) {
        weights = onednn::wrap_memory(plan.weights, packed->get(plan.weights_plain, b, plan.weights));
    } else if (plan.weights != plan.weights_plain) {
        weights = dnnl::memory(plan.weights, onednn::cpu_engine(), onednn::thread_scratch(1, plan.weights.get_size()));
        dnnl::memory plain = onednn::wrap_memory(plan.weights_plain, b);
        onednn::execute(dnnl::reorder(plain, weights), {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, weights}});
    } else {
        weights = onednn::wrap_memory(plan.weights, b);
    }
    std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, onednn::wrap_memory(plan.src, a)},
                                                  {DNNL_ARG_WEIGHTS, weights},
                                                  {DNNL_ARG_DST, onednn::wrap_memory(plan.dst, y)}};
    if (!plan.bias.is_zero()) args.emplace(DNNL_ARG_BIAS, onednn::wrap_memory(plan.bias, bias));
    onednn::add_thread_scratchpad(args, plan.scratchpad);
    onednn::execute(plan.primitive, args);
}

dnnl::memory::desc strided_desc(const dnnl::memory::dims& dims, const dnnl::memory::dims& strides) {
    return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

/// The product of A (rows x K, row-major) and a constant matrix whose packed N x K copy ("ba", the
/// layout make_matmul_plan gives constant matrices) is at `weights`, on `threads` threads split by
/// columns: each thread runs a 1-thread oneDNN product on its own slice of the weights, its columns of
/// Y (rows x N, row-major) strided in place; alpha, a sum into Y (`accumulate`), a bias row and the
/// activation as make_matmul_plan applies them. oneDNN's own threading of a 128- or 197-row product
/// lets every thread pack the weights it reads again; split by columns, each thread packs only its
/// own slice, and the transformers' products scale better (BENCHMARKS.md).
/// Returns false (nothing written) for products too small to split, or when oneDNN refuses a slice.
bool multiply_by_column_slices(const onednn::PrimitiveCache<DnnlMatmulPlan>& cache, int64_t rows, int64_t k, int64_t n,
                               const float* a, const float* weights, float* y, const float* bias, float alpha,
                               bool accumulate, const onednn::FusedActivation& activation, int threads) {
    constexpr int64_t kMinColumns = 64;             // per thread
    constexpr int64_t kMinWork = int64_t{1} << 22;  // multiply-adds per thread
    if (threads <= 1 || n < kMinColumns * threads || rows * n * k < kMinWork * threads) return false;
    using dnnl::memory;
    const int64_t base = n / threads;
    const int64_t extra = n % threads;  // the first `extra` slices take one column more
    auto slice_plan = [&](int64_t width) {
        const Shape key = {rows, k, n, width, accumulate ? -4 : -3};
        return cache.get(key, [&] {
            const memory::desc y_slice({rows, width}, memory::data_type::f32, memory::dims{n, 1});
            return make_matmul_plan(onednn::plain_desc({rows, k}), onednn::plain_desc({k, width}), y_slice, true, alpha,
                                    accumulate, activation,
                                    bias != nullptr ? onednn::plain_desc({1, width}) : memory::desc());
        });
    };
    // A slice's weights start `first * K` floats into the packed matrix.
    auto reads_packed_slice = [&](const std::shared_ptr<const DnnlMatmulPlan>& plan, int64_t width) {
        return plan != nullptr &&
               plan->weights == memory::desc({k, width}, memory::data_type::f32, memory::format_tag::ba);
    };
    const auto narrow = slice_plan(base);
    const auto wide = extra > 0 ? slice_plan(base + 1) : narrow;
    if (!reads_packed_slice(narrow, base) || !reads_packed_slice(wide, extra > 0 ? base + 1 : base)) return false;
    std::mutex failure_mutex;
    std::exception_ptr failure;
    onednn::parallel_chunks(threads, threads, [&](int64_t begin, int64_t end) {
        for (int64_t slice = begin; slice < end; ++slice) {
            const int64_t first = slice * base + std::min(slice, extra);
            const DnnlMatmulPlan& plan = slice < extra ? *wide : *narrow;
            try {
                onednn::ThreadScope one_thread(1);
                std::unordered_map<int, memory> args = {
                    {DNNL_ARG_SRC, onednn::wrap_memory(plan.src, a)},
                    {DNNL_ARG_WEIGHTS, onednn::wrap_memory(plan.weights, weights + first * k)},
                    {DNNL_ARG_DST, onednn::wrap_memory(plan.dst, y + first)}};
                if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, onednn::wrap_memory(plan.bias, bias + first));
                onednn::add_thread_scratchpad(args, plan.scratchpad);
                onednn::execute(plan.primitive, args);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(failure_mutex);
                failure = std::current_exception();
            }
        }
    });
    if (failure) std::rethrow_exception(failure);
    return true;
}

/// The packed N x K copy of a constant K x N matrix (shared with the single-product plans).
const float* packed_transposed(const onednn::PackedWeights& packed, const Tensor& b, int64_t k, int64_t n) {
    const dnnl::memory::desc ba({k, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ba);
    return static_cast<const float*>(packed.get(onednn::plain_desc({k, n}), b.data(), ba));
}

// ---- MatMul -------------------------------------------------------------------------------------------

/// Shapes of one MatMul after numpy promotion: batch dims broadcast, 1-D operands as matrices.
struct MatMulShapes {
    Shape batch;          ///< broadcast batch dims
    Shape a_batch;        ///< A's batch dims, left-padded with 1 to batch.size()
    Shape b_batch;
    int64_t m = 1, k = 1, n = 1;
    Shape output;
};

MatMulShapes matmul_shapes(const NodeInfo& node, const Shape& a, const Shape& b) {
    if (a.empty() || b.empty()) {
        node.fail("inputs must have rank >= 1\nNote: A shape = " + shape_to_string(a) + ", B shape = " + shape_to_string(b));
    }
    MatMulShapes s;
    const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
    const Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
    s.m = a2[a2.size() - 2];
    s.k = a2.back();
    s.n = b2.back();
    if (b2[b2.size() - 2] != s.k) {
        node.fail("inner dimensions do not match\nNote: A shape = " + shape_to_string(a) + ", B shape = " + shape_to_string(b));
    }
    const std::size_t rank = std::max(a2.size(), b2.size()) - 2;
    s.a_batch.assign(rank, 1);
    s.b_batch.assign(rank, 1);
    std::copy(a2.begin(), a2.end() - 2, s.a_batch.begin() + static_cast<std::ptrdiff_t>(rank - (a2.size() - 2)));
    std::copy(b2.begin(), b2.end() - 2, s.b_batch.begin() + static_cast<std::ptrdiff_t>(rank - (b2.size() - 2)));
    for (std::size_t d = 0; d < rank; ++d) {
        const int64_t da = s.a_batch[d];
        const int64_t db = s.b_batch[d];
        if (da != db && da != 1 && db != 1) {
            node.fail("batch dimensions cannot be broadcast\nNote: A shape = " + shape_to_string(a) +
                      ", B shape = " + shape_to_string(b));
        }
        s.batch.push_back(da == 1 ? db : da);
    }
    s.output = s.batch;
    if (a.size() > 1) s.output.push_back(s.m);
    if (b.size() > 1) s.output.push_back(s.n);
    return s;
}

/// Offset (in matrices) of batch item `index` of an operand with batch dims `dims` broadcast to `batch`.
int64_t broadcast_offset(int64_t index, const Shape& batch, const Shape& dims) {
    int64_t offset = 0;
    int64_t stride = 1;
    for (std::size_t d = batch.size(); d-- > 0;) {
        const int64_t i = index % batch[d];
        index /= batch[d];
        if (dims[d] != 1) offset += i * stride;
        stride *= dims[d];
    }
    return offset;
}

/// numpy matmul of contiguous operands with the loop above, one batch item at a time.
template <typename T>
void batched_naive_matmul(const MatMulShapes& s, const T* a, const T* b, T* y, int threads) {
    const int64_t batch = shape_volume(s.batch);
    for (int64_t i = 0; i < batch; ++i) {
        const T* ap = a + broadcast_offset(i, s.batch, s.a_batch) * s.m * s.k;
        const T* bp = b + broadcast_offset(i, s.batch, s.b_batch) * s.k * s.n;
        naive_matmul<T>(s.m, s.n, s.k, {ap, s.k, 1}, {bp, s.n, 1}, y + i * s.m * s.n, threads);
    }
}

/// What a fused MatMul adds to MatMul (fused_ops.h); nothing for the standard operator.
struct MatMulFusion {
    onednn::FusedActivation activation;
    float scale = 1.0f;
    bool bias = false;  ///< input 2 is a constant float32 bias [N]

    /// kRuntimeDomain's FusedMatMul.
    static MatMulFusion of_runtime_node(const NodeInfo& node) {
        return {onednn::FusedActivation(node), node.attr_float(kAlphaAttr, 1.0f), node.proto().input_size() > 2};
    }
};

class MatMulKernel final : public Kernel {
public:
    explicit MatMulKernel(const NodeInfo& node, MatMulFusion fusion = {})
        : activation_(std::move(fusion.activation)), scale_(fusion.scale) {
        if (fusion.bias) {
            const Tensor* bias = node.constant_input(2);
            const Tensor* weight = node.constant_input(1);
            if (bias == nullptr || bias->dtype() != DataType::kFloat32 || bias->rank() != 1 || weight == nullptr ||
                weight->rank() != 2)
                node.fail("a fused bias must be a constant float32 vector, and B a constant matrix");
            bias_ = *bias;
        }
        const Tensor* b = node.constant_input(1);
        if (b != nullptr && b->rank() == 2 && b->dtype() == DataType::kFloat32) constant_b_ = *b;
        if (b != nullptr && b->rank() == 2 && is_half_type(b->dtype())) constant_b_ = b->cast(DataType::kFloat32);
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& a = context.required_input(0);
        const Tensor& b = context.required_input(1);
        const DataType dtype = a.dtype();
        if (b.dtype() != dtype) {
            node.fail("inputs must share one data type\nNote: A is " + std::string(dtype_name(dtype)) + ", B is " +
                      std::string(dtype_name(b.dtype())));
        }
        if (!onednn::is_numeric_dtype(dtype)) onednn::fail_dtype(node, "input A", dtype, onednn::kNumericTypes);
        if (activation_.active() && !dtype_is_floating(dtype)) onednn::fail_dtype(node, "a fused activation's input", dtype, "float types");
        if (bias_.defined() && dtype != DataType::kFloat32) onednn::fail_dtype(node, "a fused bias's input", dtype, "float32");
        if (scale_ != 1.0f && !dtype_is_floating(dtype)) onednn::fail_dtype(node, "a fused scale's input", dtype, "float types");
        const MatMulShapes s = matmul_shapes(node, a.shape(), b.shape());
        if (bias_.defined() && bias_.numel() != s.n)
            node.fail("the fused bias has " + std::to_string(bias_.numel()) + " values for " + std::to_string(s.n) + " columns");
        const int threads = context.num_threads();
        if (is_half_type(dtype)) {
            const Tensor a32 = a.cast(DataType::kFloat32);
            const Tensor b32 = constant_b_.defined() ? constant_b_ : b.cast(DataType::kFloat32);
            Tensor y32(DataType::kFloat32, s.output);
            run_float(s, a32, b32, y32, threads);
            context.set_output(0, y32.cast(dtype));
            return;
        }
        // Every element is written unless K is 0 (then the zeros are the result).
        Tensor& y = s.k == 0 ? context.allocate_output(0, dtype, s.output)
                             : context.allocate_uninitialized_output(0, dtype, s.output);
        if (y.numel() == 0) return;
        if (s.k == 0) {  // a sum over nothing: zeros (plus the bias)
            add_bias(y);
            if (dtype_is_floating(dtype)) activation_.apply_in_place(y, threads);
            return;
        }
        switch (dtype) {
            case DataType::kFloat32: run_float(s, a, b, y, threads); break;
            case DataType::kFloat64:
                run_naive<double>(s, a, b, y, threads);
                if (scale_ != 1.0f) scale_in_place(y.data_as<double>(), y.numel());
                activation_.apply_in_place(y, threads);
                break;
            case DataType::kInt32: run_naive<int32_t>(s, a, b, y, threads); break;
            case DataType::kInt64: run_naive<int64_t>(s, a, b, y, threads); break;
            case DataType::kUInt32: run_naive<uint32_t>(s, a, b, y, threads); break;
            case DataType::kUInt64: run_naive<uint64_t>(s, a, b, y, threads); break;
            default: break;
        }
    }

private:
    template <typename T>
    static void run_naive(const MatMulShapes& s, const Tensor& a, const Tensor& b, Tensor& y, int threads) {
        batched_naive_matmul<T>(s, a.data_as<T>(), b.data_as<T>(), y.data_as<T>(), threads);
    }

    /// Multiplies by the fused scale (for the paths oneDNN does not run).
    template <typename T>
    void scale_in_place(T* data, int64_t count) const {
        for (int64_t i = 0; i < count; ++i) data[i] *= static_cast<T>(scale_);
    }

    /// Adds the fused bias to every row of a float32 `y` (for the paths oneDNN does not run).
    void add_bias(Tensor& y) const {
        if (!bias_.defined()) return;
        const float* bias = bias_.data_as<float>();
        float* data = y.data_as<float>();
        const int64_t n = bias_.numel();
        for (int64_t i = 0; i < y.numel(); ++i) data[i] += bias[i % n];
    }

    void run_float(const MatMulShapes& s, const Tensor& a, const Tensor& b, Tensor& y, int threads) const {
        if (y.numel() == 0) return;
        if (s.k == 0) {
            add_bias(y);
            activation_.apply_in_place(y, threads);
            return;
        }
        const dnnl::memory::desc bias_desc = bias_.defined() ? onednn::plain_desc({1, s.n}) : dnnl::memory::desc();
        const void* bias = bias_.defined() ? bias_.data() : nullptr;
        threads = onednn::resolve_threads(threads);
        onednn::ThreadScope scope(threads);
        const bool b_is_matrix = shape_volume(s.b_batch) == 1;
        Shape key = a.shape();
        key.push_back(-1);
        key.insert(key.end(), b.shape().begin(), b.shape().end());
        key.push_back(threads);
        using dnnl::memory;
        if (b_is_matrix) {
            // Every batch item of A times one matrix: a single (batch*M x K) * (K x N) product.
            const int64_t rows = shape_volume(s.batch) * s.m;
            const bool packed = constant_b_.defined();
            if (packed && scale_ == 1.0f && packed_gemm::available()) {
                const packed_gemm::PackedMatrix& weights =
                    own_packed_b_.get(constant_b_.data_as<float>(), s.k, s.n, s.n, 1, threads);
                packed_gemm::multiply(a.data_as<float>(), rows, s.k, weights, static_cast<const float*>(bias),
                                      y.data_as<float>(), threads);
                activation_.apply_in_place(y, threads);
                return;
            }
            if (packed && threads > 1 &&
                multiply_by_column_slices(cache_, rows, s.k, s.n, a.data_as<float>(),
                                          packed_transposed(packed_b_, constant_b_, s.k, s.n), y.data_as<float>(),
                                          static_cast<const float*>(bias), scale_, false, activation_, threads))
                return;
            auto plan = cache_.get(key, [&] {
                return make_matmul_plan(onednn::plain_desc({rows, s.k}), onednn::plain_desc({s.k, s.n}),
                                        onednn::plain_desc({rows, s.n}), packed, scale_, false, activation_, bias_desc);
            });
            if (plan != nullptr) {
                run_matmul_plan(*plan, a.data(), packed ? constant_b_.data() : b.data(), y.data(),
                                packed ? &packed_b_ : nullptr, bias);
                return;
            }
        } else {
            // Batched product with broadcast batch dims in one primitive when oneDNN takes it (a fused
            // bias comes with a matrix B only).
            auto plan = cache_.get(key, [&] {
                const std::size_t rank = s.batch.size() + 2;
                if (rank > DNNL_MAX_NDIMS) return std::shared_ptr<const DnnlMatmulPlan>();
                memory::dims a_dims(s.a_batch.begin(), s.a_batch.end());
                memory::dims b_dims(s.b_batch.begin(), s.b_batch.end());
                memory::dims y_dims(s.batch.begin(), s.batch.end());
                a_dims.insert(a_dims.end(), {s.m, s.k});
                b_dims.insert(b_dims.end(), {s.k, s.n});
                y_dims.insert(y_dims.end(), {s.m, s.n});
                return make_matmul_plan(onednn::plain_desc(a_dims), onednn::plain_desc(b_dims), onednn::plain_desc(y_dims),
                                        false, scale_, false, activation_);
            });
            if (plan != nullptr) {
                run_matmul_plan(*plan, a.data(), b.data(), y.data(), nullptr);
                return;
            }
        }
        // oneDNN refused the batched form: one 2-D product per batch item.
        Shape key2 = {s.m, s.k, s.n, threads, -2};
        auto plan = cache_.get(key2, [&] {
            return make_matmul_plan(onednn::plain_desc({s.m, s.k}), onednn::plain_desc({s.k, s.n}),
                                    onednn::plain_desc({s.m, s.n}), false, scale_, false, activation_, bias_desc);
        });
        const int64_t batch = shape_volume(s.batch);
        for (int64_t i = 0; i < batch; ++i) {
            const float* ap = a.data_as<float>() + broadcast_offset(i, s.batch, s.a_batch) * s.m * s.k;
            const float* bp = b.data_as<float>() + broadcast_offset(i, s.batch, s.b_batch) * s.k * s.n;
            float* yp = y.data_as<float>() + i * s.m * s.n;
            if (plan != nullptr) {
                run_matmul_plan(*plan, ap, bp, yp, nullptr, bias);
            } else {
                naive_matmul<float>(s.m, s.n, s.k, {ap, s.k, 1}, {bp, s.n, 1}, yp, threads);
            }
        }
        if (plan == nullptr) {
            if (scale_ != 1.0f) scale_in_place(y.data_as<float>(), y.numel());
            add_bias(y);
            activation_.apply_in_place(y, threads);
        }
    }

    onednn::FusedActivation activation_;
    float scale_;        ///< the fused scale (kAlphaAttr), 1 when none
    Tensor bias_;        ///< the fused bias (input 2), float32 [N]
    Tensor constant_b_;  ///< float32 value of a constant 2-D B
    packed_gemm::LazyPackedMatrix own_packed_b_;  ///< constant_b_ for packed_gemm (AVX2 CPUs)
    onednn::PackedWeights packed_b_;              ///< constant_b_ for oneDNN (other CPUs)
    onednn::PrimitiveCache<DnnlMatmulPlan> cache_;
};

// ---- MatMulInteger --------------------------------------------------------------------------------------------

/// `x` (int8/uint8) minus its zero point, widened to int32. The zero point is a scalar or holds one
/// value per row of A / per column of B (`per_index` values, the operand's dim `axis_from_end` from
/// the end).
Tensor subtract_zero_point(const NodeInfo& node, const Tensor& x, const Tensor* zero_point, int64_t axis_from_end,
                           const char* name) {
    Tensor result(DataType::kInt32, x.shape());
    int32_t* out = result.data_as<int32_t>();
    const int64_t count = x.numel();
    auto value = [&](const Tensor& t, int64_t i) -> int32_t {
        return t.dtype() == DataType::kInt8 ? t.data_as<int8_t>()[i] : t.data_as<uint8_t>()[i];
    };
    if (zero_point == nullptr || !zero_point->defined()) {
        for (int64_t i = 0; i < count; ++i) out[i] = value(x, i);
        return result;
    }
    if (zero_point->dtype() != x.dtype()) {
        node.fail(std::string("input ") + name + " must have the data type of its operand\nNote: " + name + " is " +
                  std::string(dtype_name(zero_point->dtype())) + ", the operand is " + std::string(dtype_name(x.dtype())));
    }
    const int64_t rank = x.rank();
    const int64_t axis = rank - axis_from_end;
    const bool has_axis = axis >= 0 && axis < rank;
    const int64_t per_index = has_axis ? x.shape()[static_cast<std::size_t>(axis)] : 1;
    int64_t inner = 1;
    for (int64_t d = has_axis ? axis + 1 : rank; d < rank; ++d) inner *= x.shape()[static_cast<std::size_t>(d)];
    if (zero_point->numel() == 1) {
        const int32_t z = value(*zero_point, 0);
        for (int64_t i = 0; i < count; ++i) out[i] = value(x, i) - z;
    } else if (zero_point->rank() <= 1 && zero_point->numel() == per_index) {
        for (int64_t i = 0; i < count; ++i) out[i] = value(x, i) - value(*zero_point, (i / inner) % per_index);
    } else {
        throw UnsupportedError("Node '" + node.name() + "' (" + node.op_type() + "): input " + name +
                               " must be a scalar or hold one value per " + (axis_from_end == 2 ? "row of A" : "column of B") +
                               "\nNote: " + name + " shape = " + shape_to_string(zero_point->shape()));
    }
    return result;
}

// ---- com.microsoft.FusedMatMul --------------------------------------------------------------------

/// `tensor` with its dimensions permuted by `perm` (a copy; any element type).
Tensor permuted(const Tensor& tensor, const std::vector<std::size_t>& perm) {
    const Shape& in = tensor.shape();
    Shape out(perm.size());
    for (std::size_t d = 0; d < perm.size(); ++d) out[d] = in[perm[d]];
    Tensor result = Tensor::uninitialized(tensor.dtype(), out);
    const std::size_t element = dtype_size(tensor.dtype());
    std::vector<int64_t> in_strides(in.size(), 1);
    for (std::size_t d = in.size(); d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
    const auto* source = static_cast<const uint8_t*>(tensor.data());
    auto* target = static_cast<uint8_t*>(result.data());
    std::vector<int64_t> index(out.size(), 0);
    for (int64_t i = 0; i < result.numel(); ++i) {
        int64_t offset = 0;
        for (std::size_t d = 0; d < out.size(); ++d) offset += index[d] * in_strides[perm[d]];
        std::memcpy(target + static_cast<std::size_t>(i) * element, source + static_cast<std::size_t>(offset) * element,
                    element);
        for (std::size_t d = out.size(); d-- > 0;) {
            if (++index[d] < out[d]) break;
            index[d] = 0;
        }
    }
    return result;
}

/// FusedMatMul (ONNX Runtime's MatMul with transposes and a scale): Y = alpha * A' B', where each
/// operand is first transposed in its batch dimensions (transBatchA/B: the first dimension moves
/// before the last, rank 3 or more) and then in its last two (transA/B). Float types; the product
/// accumulates in the operand type (float16 and bfloat16 in float32) and is scaled once.
class FusedMatMulKernel final : public Kernel {
public:
    explicit FusedMatMulKernel(const NodeInfo& node)
        : alpha_(node.attr_float("alpha", 1.0f)),
          trans_a_(node.attr_int("transA", 0) != 0),
          trans_b_(node.attr_int("transB", 0) != 0),
          trans_batch_a_(node.attr_int("transBatchA", 0) != 0),
          trans_batch_b_(node.attr_int("transBatchB", 0) != 0) {
        // Without transposes it is the scaled MatMul the graph passes write (attention's scores):
        // the MatMul kernel's fast paths, with alpha applied as the product is stored.
        if (!trans_a_ && !trans_b_ && !trans_batch_a_ && !trans_batch_b_)
            plain_ = std::make_unique<MatMulKernel>(node, MatMulFusion{{}, alpha_, false});
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& a0 = context.required_input(0);
        const Tensor& b0 = context.required_input(1);
        if (a0.dtype() != b0.dtype())
            node.fail("inputs must share one data type\nNote: A is " + std::string(dtype_name(a0.dtype())) + ", B is " +
                      std::string(dtype_name(b0.dtype())));
        const DataType t = a0.dtype();
        if (t != DataType::kFloat32 && t != DataType::kFloat64 && t != DataType::kFloat16 && t != DataType::kBFloat16)
            onednn::fail_dtype(node, "input A", t, "float32, float64, float16 or bfloat16");
        if (plain_) return plain_->compute(context);
        const DataType compute = a0.dtype() == DataType::kFloat64 ? DataType::kFloat64 : DataType::kFloat32;
        const Tensor a = arranged(node, a0.cast(compute), trans_batch_a_, trans_a_, "A");
        const Tensor b = arranged(node, b0.cast(compute), trans_batch_b_, trans_b_, "B");
        const MatMulShapes s = matmul_shapes(node, a.shape(), b.shape());
        Tensor y(compute, s.output);
        if (compute == DataType::kFloat64) {
            batched_naive_matmul<double>(s, a.data_as<double>(), b.data_as<double>(), y.data_as<double>(),
                                         context.num_threads());
            if (alpha_ != 1.0f)
                for (int64_t i = 0; i < y.numel(); ++i) y.data_as<double>()[i] *= static_cast<double>(alpha_);
        } else {
            batched_naive_matmul<float>(s, a.data_as<float>(), b.data_as<float>(), y.data_as<float>(),
                                        context.num_threads());
            if (alpha_ != 1.0f)
                for (int64_t i = 0; i < y.numel(); ++i) y.data_as<float>()[i] *= alpha_;
        }
        context.set_output(0, y.cast(a0.dtype()));
    }

private:
    // The operand as the product reads it: batch-transposed, then transposed.
    static Tensor arranged(const NodeInfo& node, Tensor operand, bool trans_batch, bool trans, const char* name) {
        const std::size_t rank = static_cast<std::size_t>(operand.rank());
        if ((trans_batch && rank < 3) || (trans && rank < 2))
            node.fail(std::string("input ") + name + " of shape " + shape_to_string(operand.shape()) +
                      " cannot be transposed as " + (trans_batch ? "transBatch" : "trans") + name + " asks (rank " +
                      (trans_batch ? "3" : "2") + " or more needed)");
        std::vector<std::size_t> perm(rank);
        for (std::size_t d = 0; d < rank; ++d) perm[d] = d;
        if (trans_batch) {
            std::rotate(perm.begin(), perm.begin() + 1, perm.end() - 1);  // [1, ..., R-2, 0, R-1]
        }
        if (trans) std::swap(perm[rank - 2], perm[rank - 1]);
        bool identity = true;
        for (std::size_t d = 0; d < rank; ++d) identity = identity && perm[d] == d;
        return identity ? operand : permuted(operand, perm);
    }

    float alpha_;
    bool trans_a_, trans_b_, trans_batch_a_, trans_batch_b_;
    std::unique_ptr<MatMulKernel> plain_;  ///< without transposes: the MatMul kernel, scaled
};

class MatMulIntegerKernel final : public Kernel {
public:
    explicit MatMulIntegerKernel(const NodeInfo&) {}

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& a = context.required_input(0);
        const Tensor& b = context.required_input(1);
        for (const Tensor* t : {&a, &b}) {
            if (t->dtype() != DataType::kInt8 && t->dtype() != DataType::kUInt8) {
                onednn::fail_dtype(node, t == &a ? "input A" : "input B", t->dtype(), "int8, uint8");
            }
        }
        const MatMulShapes s = matmul_shapes(node, a.shape(), b.shape());
        // A's rows are its second-to-last dim (a 1-D A is a single row); B's columns its last dim.
        const Tensor a32 = subtract_zero_point(node, a, context.input(2), a.rank() == 1 ? 0 : 2, "a_zero_point");
        const Tensor b32 = subtract_zero_point(node, b, context.input(3), b.rank() == 1 ? 0 : 1, "b_zero_point");
        Tensor& y = s.k == 0 ? context.allocate_output(0, DataType::kInt32, s.output)
                             : context.allocate_uninitialized_output(0, DataType::kInt32, s.output);
        if (y.numel() == 0 || s.k == 0) return;
        batched_naive_matmul<int32_t>(s, a32.data_as<int32_t>(), b32.data_as<int32_t>(), y.data_as<int32_t>(),
                                      context.num_threads());
    }
};

// ---- Gemm ---------------------------------------------------------------------------------------------

class GemmKernel final : public Kernel {
public:
    /// `activation`: a fused Gemm's, applied as the output is stored.
    explicit GemmKernel(const NodeInfo& node, onednn::FusedActivation activation = {})
        : activation_(std::move(activation)) {
        trans_a_ = read_flag(node, "transA");
        trans_b_ = read_flag(node, "transB");
        alpha_ = node.attr_float("alpha", 1.0f);
        beta_ = node.attr_float("beta", 1.0f);
        if (node.opset() < 7 && node.attr_int("broadcast", 0) == 0 && node.has_attr("broadcast")) {
            // Gemm-1..6 without broadcast: C must be (M, N); checked when the shapes are known.
            strict_c_ = true;
        }
        for (std::size_t i = 0; i < 2; ++i) {
            const Tensor* operand = node.constant_input(i);
            if (operand != nullptr && operand->rank() != 2) {
                node.fail(std::string("input ") + (i == 0 ? "A" : "B") + " must be a matrix (rank 2)\nNote: shape = " +
                          shape_to_string(operand->shape()));
            }
        }
        const Tensor* b = node.constant_input(1);
        if (b != nullptr && b->dtype() == DataType::kFloat32) constant_b_ = *b;
        if (b != nullptr && is_half_type(b->dtype())) constant_b_ = b->cast(DataType::kFloat32);
    }

    static bool read_flag(const NodeInfo& node, const char* name) {
        const int64_t value = node.attr_int(name, 0);
        if (value != 0 && value != 1) node.fail(std::string("attribute '") + name + "' must be 0 or 1\nNote: " + name + " = " + std::to_string(value));
        return value == 1;
    }

    void compute(KernelContext& context) const override {
        const NodeInfo& node = context.node();
        const Tensor& a = context.required_input(0);
        const Tensor& b = context.required_input(1);
        const Tensor* c = context.input(2);
        if (c != nullptr && !c->defined()) c = nullptr;
        const DataType dtype = a.dtype();
        if (b.dtype() != dtype || (c != nullptr && c->dtype() != dtype)) {
            node.fail("inputs must share one data type\nNote: A is " + std::string(dtype_name(dtype)) + ", B is " +
                      std::string(dtype_name(b.dtype())) +
                      (c != nullptr ? ", C is " + std::string(dtype_name(c->dtype())) : std::string()));
        }
        if (!onednn::is_numeric_dtype(dtype)) onednn::fail_dtype(node, "input A", dtype, onednn::kNumericTypes);
        if (activation_.active() && !dtype_is_floating(dtype)) onednn::fail_dtype(node, "a fused activation's input", dtype, "float types");
        if (a.rank() != 2 || b.rank() != 2) {
            node.fail("inputs A and B must be matrices (rank 2)\nNote: A shape = " + shape_to_string(a.shape()) +
                      ", B shape = " + shape_to_string(b.shape()));
        }
        const int64_t m = trans_a_ ? a.shape()[1] : a.shape()[0];
        const int64_t k = trans_a_ ? a.shape()[0] : a.shape()[1];
        const int64_t kb = trans_b_ ? b.shape()[1] : b.shape()[0];
        const int64_t n = trans_b_ ? b.shape()[0] : b.shape()[1];
        if (k != kb) {
            node.fail("inner dimensions do not match (transA = " + std::to_string(trans_a_) + ", transB = " +
                      std::to_string(trans_b_) + ")\nNote: A shape = " + shape_to_string(a.shape()) +
                      ", B shape = " + shape_to_string(b.shape()));
        }
        Shape c_shape;
        if (c != nullptr) {
            c_shape = c->shape();
            const Shape full = {m, n};
            bool ok = c_shape.size() <= 2;
            for (std::size_t i = 0; ok && i < c_shape.size(); ++i) {
                const int64_t dim = c_shape[c_shape.size() - 1 - i];
                const int64_t want = full[1 - i];
                ok = dim == want || (dim == 1 && !strict_c_);
            }
            if (strict_c_ && c_shape.size() != 2) ok = false;
            if (!ok) {
                node.fail("input C cannot be broadcast to (M, N) = " + shape_to_string(full) + "\nNote: C shape = " +
                          shape_to_string(c_shape));
            }
        }
        const Shape out_shape = {m, n};
        const int threads = context.num_threads();
        if (is_half_type(dtype)) {
            const Tensor a32 = a.cast(DataType::kFloat32);
            const Tensor b32 = constant_b_.defined() ? constant_b_ : b.cast(DataType::kFloat32);
            std::optional<Tensor> c32;
            if (c != nullptr) c32 = c->cast(DataType::kFloat32);
            Tensor y32(DataType::kFloat32, out_shape);
            run_float(a32, b32, c32 ? &*c32 : nullptr, y32, m, k, n, threads);
            context.set_output(0, y32.cast(dtype));
            return;
        }
        // Every path writes every element (C, zeros or the product first).
        Tensor& y = context.allocate_uninitialized_output(0, dtype, out_shape);
        if (y.numel() == 0) return;
        switch (dtype) {
            case DataType::kFloat32: run_float(a, b, c, y, m, k, n, threads); break;
            case DataType::kFloat64:
                run_naive<double>(a, b, c, y, m, k, n, threads);
                activation_.apply_in_place(y, threads);
                break;
            case DataType::kInt32: run_naive<int32_t>(a, b, c, y, m, k, n, threads); break;
            case DataType::kInt64: run_naive<int64_t>(a, b, c, y, m, k, n, threads); break;
            case DataType::kUInt32: run_naive<uint32_t>(a, b, c, y, m, k, n, threads); break;
            case DataType::kUInt64: run_naive<uint64_t>(a, b, c, y, m, k, n, threads); break;
            default: break;
        }
    }

private:
    /// y[i, j] = scale * C broadcast to (m, n).
    template <typename T>
    static void fill_with_c(const Tensor& c, double scale, int64_t m, int64_t n, T* y, int threads) {
        const Shape& cs = c.shape();
        const int64_t c_rows = cs.size() == 2 ? cs[0] : 1;
        const int64_t c_cols = cs.empty() ? 1 : cs.back();
        const T* cp = c.data_as<T>();
        onednn::parallel_for(m, threads, n, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                const T* row = cp + (c_rows == 1 ? 0 : i) * c_cols;
                for (int64_t j = 0; j < n; ++j) {
                    const T value = row[c_cols == 1 ? 0 : j];
                    y[i * n + j] = scale == 1.0 ? value : static_cast<T>(scale * static_cast<double>(value));
                }
            }
        });
    }

    template <typename T>
    void run_naive(const Tensor& a, const Tensor& b, const Tensor* c, Tensor& y, int64_t m, int64_t k, int64_t n,
                   int threads) const {
        const int64_t a_cols = a.shape()[1];
        const int64_t b_cols = b.shape()[1];
        const MatrixView<T> av = trans_a_ ? MatrixView<T>{a.data_as<T>(), 1, a_cols} : MatrixView<T>{a.data_as<T>(), a_cols, 1};
        const MatrixView<T> bv = trans_b_ ? MatrixView<T>{b.data_as<T>(), 1, b_cols} : MatrixView<T>{b.data_as<T>(), b_cols, 1};
        T* yp = y.data_as<T>();
        naive_matmul<T>(m, n, k, av, bv, yp, threads);
        const bool use_c = c != nullptr && beta_ != 0.0f;
        if (alpha_ == 1.0f && (!use_c || beta_ == 1.0f)) {
            if (!use_c) return;
            Tensor c_full(y.dtype(), y.shape());
            fill_with_c<T>(*c, 1.0, m, n, c_full.data_as<T>(), threads);
            const T* cf = c_full.data_as<T>();
            using Acc = typename WrapType<T>::type;
            for (int64_t i = 0; i < m * n; ++i) yp[i] = static_cast<T>(static_cast<Acc>(yp[i]) + static_cast<Acc>(cf[i]));
            return;
        }
        // General alpha/beta: combine in double (numpy promotes to float64 here too).
        Tensor c_full(DataType::kFloat64, y.shape());
        if (use_c) {
            const Tensor c64 = c->cast(DataType::kFloat64);
            fill_with_c<double>(c64, static_cast<double>(beta_), m, n, c_full.data_as<double>(), threads);
        }
        const double* cf = c_full.data_as<double>();
        for (int64_t i = 0; i < m * n; ++i) {
            yp[i] = static_cast<T>(static_cast<double>(alpha_) * static_cast<double>(yp[i]) + cf[i]);
        }
    }

    void run_float(const Tensor& a, const Tensor& b, const Tensor* c, Tensor& y, int64_t m, int64_t k, int64_t n,
                   int threads) const {
        float* yp = y.data_as<float>();
        const bool use_c = c != nullptr && beta_ != 0.0f;
        const bool packed = constant_b_.defined();
        // The usual Linear layer (constant B, alpha 1, C absent or a bias row): the runtime's own GEMM,
        // which adds the bias after the product as the sum with y = C below does.
        const bool c_is_bias_row = use_c && beta_ == 1.0f && c->numel() == n &&
                                   (c->rank() == 1 || (c->rank() == 2 && c->shape()[0] == 1));
        if (k > 0 && packed && !trans_a_ && alpha_ == 1.0f && (!use_c || c_is_bias_row) && packed_gemm::available()) {
            const packed_gemm::PackedMatrix& weights =
                trans_b_ ? own_packed_b_.get(constant_b_.data_as<float>(), k, n, 1, k, threads)
                         : own_packed_b_.get(constant_b_.data_as<float>(), k, n, n, 1, threads);
            packed_gemm::multiply(a.data_as<float>(), m, k, weights, use_c ? c->data_as<float>() : nullptr, yp, threads);
            activation_.apply_in_place(y, threads);
            return;
        }
        if (use_c) fill_with_c<float>(*c, static_cast<double>(beta_), m, n, yp, threads);
        if (k == 0 || alpha_ == 0.0f) {
            if (!use_c) std::fill(yp, yp + m * n, 0.0f);
            activation_.apply_in_place(y, threads);
            return;
        }
        threads = onednn::resolve_threads(threads);
        onednn::ThreadScope scope(threads);
        // A Linear layer's product on several threads, split by columns (transB: B is N x K already).
        if (packed && !trans_a_ && threads > 1 &&
            multiply_by_column_slices(
                cache_, m, k, n, a.data_as<float>(),
                trans_b_ ? constant_b_.data_as<float>() : packed_transposed(packed_b_, constant_b_, k, n), yp, nullptr,
                alpha_, use_c, activation_, threads))
            return;
        Shape key = {m, k, n, use_c ? 1 : 0, threads};
        auto plan = cache_.get(key, [&] {
            const auto a_desc = trans_a_ ? strided_desc({m, k}, {1, m}) : strided_desc({m, k}, {k, 1});
            const auto b_desc = trans_b_ ? strided_desc({k, n}, {1, k}) : strided_desc({k, n}, {n, 1});
            return make_matmul_plan(a_desc, b_desc, onednn::plain_desc({m, n}), packed, alpha_, use_c, activation_);
        });
        if (plan != nullptr) {
            run_matmul_plan(*plan, a.data(), packed ? constant_b_.data() : b.data(), yp, packed ? &packed_b_ : nullptr);
            return;
        }
        // oneDNN refused: plain loop, then alpha * AB + (beta * C already in y).
        Tensor product(DataType::kFloat32, {m, n});
        const int64_t a_cols = a.shape()[1];
        const int64_t b_cols = b.shape()[1];
        naive_matmul<float>(m, n, k,
                            trans_a_ ? MatrixView<float>{a.data_as<float>(), 1, a_cols} : MatrixView<float>{a.data_as<float>(), a_cols, 1},
                            trans_b_ ? MatrixView<float>{b.data_as<float>(), 1, b_cols} : MatrixView<float>{b.data_as<float>(), b_cols, 1},
                            product.data_as<float>(), threads);
        const float* pp = product.data_as<float>();
        for (int64_t i = 0; i < m * n; ++i) yp[i] = alpha_ * pp[i] + (use_c ? yp[i] : 0.0f);
        activation_.apply_in_place(y, threads);
    }

    bool trans_a_ = false;
    bool trans_b_ = false;
    float alpha_ = 1.0f;
    float beta_ = 1.0f;
    bool strict_c_ = false;
    onednn::FusedActivation activation_;
    Tensor constant_b_;
    packed_gemm::LazyPackedMatrix own_packed_b_;  ///< constant_b_ for packed_gemm (AVX2 CPUs)
    onednn::PackedWeights packed_b_;              ///< constant_b_ for oneDNN (other CPUs)
    onednn::PrimitiveCache<DnnlMatmulPlan> cache_;
};

}  // namespace

/// com.microsoft.FusedGemm: Gemm (same attributes and inputs) whose output goes through the
/// activation its "activation" attributes name (contrib_activation.h). Relu is applied as the
/// output is stored, as in the runtime's own FusedGemm (the graph passes write this operator for
/// it); ONNX Runtime's other activations run after the product.
class FusedGemmKernel final : public Kernel {
public:
    explicit FusedGemmKernel(const NodeInfo& node)
        : gemm_(node, stored_relu(node) ? onednn::FusedActivation(node) : onednn::FusedActivation()),
          activation_(stored_relu(node)
                          ? contrib::FusedOutputActivation()
                          : contrib::FusedOutputActivation(node, contrib::FusedOutputActivation::Params::kNamed)) {}

    void compute(KernelContext& context) const override {
        gemm_.compute(context);
        if (!activation_.active()) return;
        Tensor& y = context.output(0);
        if (!y.buffer_unshared()) y = y.clone();  // Gemm may hand back a buffer the session holds
        activation_.apply_in_place(y);
    }

private:
    static bool stored_relu(const NodeInfo& node) { return node.attr_string(kActivationAttr, "") == "Relu"; }

    GemmKernel gemm_;
    contrib::FusedOutputActivation activation_;
};

void register_matmul_ops(OpRegistry& registry) {
    registry.add("", "MatMul", 1, kMaxOpset, make_factory<MatMulKernel>());
    registry.add("", "Gemm", 1, kMaxOpset, make_factory<GemmKernel>());
    registry.add("", "MatMulInteger", 10, kMaxOpset, make_factory<MatMulIntegerKernel>());
    registry.add(kMicrosoftDomain, "FusedMatMul", 1, kMaxOpset, make_factory<FusedMatMulKernel>());
    registry.add(kMicrosoftDomain, "FusedGemm", 1, kMaxOpset, make_factory<FusedGemmKernel>());
    registry.add(kRuntimeDomain, "FusedMatMul", 1, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
        return std::make_unique<MatMulKernel>(node, MatMulFusion::of_runtime_node(node));
    });
    registry.add(kRuntimeDomain, "FusedGemm", 1, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<Kernel> {
        return std::make_unique<GemmKernel>(node, onednn::FusedActivation(node));
    });
}

}  // namespace polygraphy::ref
