#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/ref/fused_ops.h"
#include "onnxrt_reference.h"
#include "op_test_util.h"
#include "test_helpers.h"

namespace polygraphy::testing {
namespace {

/// numpy.matmul written out: batch dims broadcast, 1-D operands promoted and their dim removed.
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
    Shape as = a.shape(), bs = b.shape();
    const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
    if (a_vec) as.insert(as.begin(), 1);
    if (b_vec) bs.push_back(1);
    const std::size_t rank = std::max(as.size(), bs.size());
    while (as.size() < rank) as.insert(as.begin(), 1);
    while (bs.size() < rank) bs.insert(bs.begin(), 1);
    const int64_t m = as[rank - 2], k = as[rank - 1], n = bs[rank - 1];
    Shape batch;
    for (std::size_t d = 0; d + 2 < rank; ++d) batch.push_back(std::max(as[d], bs[d]));
    int64_t batch_count = 1;
    for (int64_t d : batch) batch_count *= d;
    std::vector<double> y;
    for (int64_t i = 0; i < batch_count; ++i) {
        // batch index -> offsets in a and b (a dim of 1 is broadcast)
        int64_t rest = i, a_off = 0, b_off = 0, a_stride = 1, b_stride = 1;
        for (std::size_t d = batch.size(); d-- > 0;) {
            const int64_t idx = rest % batch[d];
            rest /= batch[d];
            a_off += (as[d] == 1 ? 0 : idx) * a_stride;
            b_off += (bs[d] == 1 ? 0 : idx) * b_stride;
            a_stride *= as[d];
            b_stride *= bs[d];
        }
        for (int64_t r = 0; r < m; ++r) {
            for (int64_t c = 0; c < n; ++c) {
                double acc = 0;
                for (int64_t p = 0; p < k; ++p) {
                    acc += a.value_as_double(a_off * m * k + r * k + p) * b.value_as_double(b_off * k * n + p * n + c);
                }
                y.push_back(acc);
            }
        }
    }
    Shape out = batch;
    if (!a_vec) out.push_back(m);
    if (!b_vec) out.push_back(n);
    return Tensor::from_doubles(DataType::kFloat64, out, y);
}

TEST(MatMulOp, SmallExample) {
    // numpy: np.arange(6.).reshape(2, 3) @ np.arange(6.).reshape(3, 2) = [[10, 13], [28, 40]]
    KernelHarness h("MatMul", 13);
    h.input(f32({2, 3}, arange(6))).input(f32({3, 2}, arange(6)));
    expect_close(h.run()[0], {2, 2}, {10, 13, 28, 40});
}

TEST(MatMulOp, OneDimensionalOperands) {
    // numpy: np.arange(3.) @ np.arange(6.).reshape(3, 2) = [10, 13]; reshape(2, 3) @ arange(3.) = [5, 14];
    // np.arange(3.) @ np.arange(3.) = 5 (a scalar)
    KernelHarness vm("MatMul", 13);
    vm.input(f32({3}, arange(3))).input(f32({3, 2}, arange(6)), true);
    expect_close(vm.run()[0], {2}, {10, 13});
    KernelHarness mv("MatMul", 13);
    mv.input(f32({2, 3}, arange(6))).input(f32({3}, arange(3)));
    expect_close(mv.run()[0], {2}, {5, 14});
    KernelHarness vv("MatMul", 13);
    vv.input(f32({3}, arange(3))).input(f32({3}, arange(3)));
    expect_close(vv.run()[0], Shape{}, {5});
}

struct MatMulCase {
    std::string name;
    Shape a, b;
    bool constant_b;
};

TEST(MatMulOp, BroadcastingMatchesNaiveReference) {
    const std::vector<MatMulCase> cases = {
        {"2d", {7, 13}, {13, 5}, false},
        {"2d constant (packed)", {33, 64}, {64, 48}, true},
        {"batched A, matrix B (flattened)", {2, 3, 4, 5}, {5, 6}, true},
        {"batched A, matrix B computed", {2, 3, 4, 5}, {5, 6}, false},
        {"same batch", {2, 3, 4, 5}, {2, 3, 5, 6}, false},
        {"broadcast both", {2, 1, 4, 5}, {3, 5, 6}, false},
        {"matrix A, batched B", {4, 5}, {2, 5, 6}, false},
        {"vector A, batched B", {5}, {3, 5, 2}, false},
        {"batched A, vector B", {2, 3, 5}, {5}, true},
        {"attention scores", {1, 4, 17, 16}, {1, 4, 16, 17}, false},
        {"rank 5 broadcast", {2, 1, 3, 2, 4}, {1, 2, 1, 4, 3}, false},
        {"unit batch B", {3, 4, 5}, {1, 5, 2}, true},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        const Tensor a = random_tensor(c.a, 11);
        const Tensor b = random_tensor(c.b, 12);
        for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
            KernelHarness h("MatMul", 13);
            h.input(a.cast(dtype)).input(b.cast(dtype), c.constant_b);
            const Tensor y = h.run(2, 2)[0];
            EXPECT_EQ(y.dtype(), dtype);
            expect_close(y, naive_matmul(a, b), dtype == DataType::kFloat32 ? 1e-5 : 1e-12, 1e-6);
        }
    }
}

TEST(MatMulOp, IntegerAndHalfTypes) {
    // numpy: (np.arange(6).reshape(2, 3) - 2) @ (np.arange(6).reshape(3, 2) * 3) = [[-6, -15], [48, 66]]
    for (DataType dtype : {DataType::kInt32, DataType::kInt64}) {
        KernelHarness h("MatMul", 13);
        h.input(Tensor::from_doubles(dtype, {2, 3}, arange(6, -2))).input(Tensor::from_doubles(dtype, {3, 2}, arange(6, 0, 3)));
        const Tensor y = h.run()[0];
        EXPECT_EQ(y.dtype(), dtype);
        expect_close(y, {2, 2}, {-6, -15, 48, 66}, 0, 0);
    }
    KernelHarness u("MatMul", 13);
    u.input(Tensor::from_doubles(DataType::kUInt64, {1, 2}, {3, 4})).input(Tensor::from_doubles(DataType::kUInt64, {2, 1}, {5, 6}));
    expect_close(u.run()[0], {1, 1}, {39}, 0, 0);
    const Tensor a = random_tensor({4, 8}, 1), b = random_tensor({8, 3}, 2);
    KernelHarness h("MatMul", 13);
    h.input(a.cast(DataType::kFloat16)).input(b.cast(DataType::kFloat16), true);
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kFloat16);
    expect_close(y, naive_matmul(a.cast(DataType::kFloat16), b.cast(DataType::kFloat16)), 2e-3, 2e-3);
}

TEST(MatMulOp, ZeroSizeAndEmptyInnerDim) {
    KernelHarness empty("MatMul", 13);
    empty.input(Tensor(DataType::kFloat32, {0, 3})).input(random_tensor({3, 4}, 1), true);
    EXPECT_EQ(empty.run()[0].shape(), (Shape{0, 4}));
    // numpy: np.ones((2, 0)) @ np.ones((0, 3)) = zeros((2, 3))
    KernelHarness inner("MatMul", 13);
    inner.input(Tensor(DataType::kFloat32, {2, 0})).input(Tensor(DataType::kFloat32, {0, 3}));
    expect_close(inner.run()[0], {2, 3}, std::vector<double>(6, 0.0));
}

TEST(MatMulOp, RejectsMismatchedShapes) {
    KernelHarness inner("MatMul", 13);
    inner.input(random_tensor({2, 3}, 1)).input(random_tensor({4, 2}, 2));
    expect_error([&] { inner.run(); }, "Node 'node' (MatMul): inner dimensions do not match");
    KernelHarness batch("MatMul", 13);
    batch.input(random_tensor({2, 2, 3}, 1)).input(random_tensor({3, 3, 2}, 2));
    expect_error([&] { batch.run(); }, "batch dimensions cannot be broadcast");
    KernelHarness scalar("MatMul", 13);
    scalar.input(f32({}, {1})).input(random_tensor({3, 2}, 2));
    expect_error([&] { scalar.run(); }, "inputs must have rank >= 1");
}

TEST(MatMulOp, FusedScaleMultipliesTheProductOfEveryPath) {
    // The scale of the runtime's FusedMatMul (kAlphaAttr): oneDNN's batched product, a float64
    // product (plain loop), and an integer product, which refuses it.
    const Tensor a = random_tensor({2, 3, 4, 5}, 1), b = random_tensor({2, 3, 5, 6}, 2);
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
        KernelHarness h("FusedMatMul", 13);
        h.node().set_domain(ref::kRuntimeDomain);
        set_attr(h.node(), std::string(ref::kAlphaAttr), 0.125f);
        h.input(a.cast(dtype)).input(b.cast(dtype));
        const Tensor expected = naive_matmul(a, b);
        std::vector<double> scaled(static_cast<std::size_t>(expected.numel()));
        for (int64_t i = 0; i < expected.numel(); ++i)
            scaled[static_cast<std::size_t>(i)] = expected.value_as_double(i) * 0.125;
        expect_close(h.run()[0], expected.shape(), scaled);
    }
    KernelHarness integer("FusedMatMul", 13);
    integer.node().set_domain(ref::kRuntimeDomain);
    set_attr(integer.node(), std::string(ref::kAlphaAttr), 0.5f);
    integer.input(Tensor::from_doubles(DataType::kInt32, {1, 2}, {3, 4}))
        .input(Tensor::from_doubles(DataType::kInt32, {2, 1}, {5, 6}));
    expect_error([&] { integer.run(); }, "a fused scale's input");
}

TEST(MatMulOp, ConstantWeightsSplitByColumnsOverThreadsMatchTheProduct) {
    // Large enough for each of 2 and 3 threads to take its own slice of the 601 columns (one column
    // more for the first slices), with a fused bias and SiLU: each thread count matches the naive
    // product, and repeats its own bits.
    const Tensor x = random_tensor({2, 48, 256}, 1), w = random_tensor({256, 601}, 2), bias = random_tensor({601}, 3);
    const Tensor product = naive_matmul(x, w);
    for (int threads : {1, 2, 3}) {
        KernelHarness h("FusedMatMul", 13);
        h.node().set_domain(ref::kRuntimeDomain);
        set_attr(h.node(), std::string(ref::kActivationAttr), std::string("Silu"));
        h.input(x).input(w, true).input(bias, true);
        const Tensor y = h.run(threads)[0], again = h.run(threads)[0];
        ASSERT_EQ(y.shape(), (Shape{2, 48, 601}));
        EXPECT_EQ(0, std::memcmp(y.data(), again.data(), y.nbytes())) << threads << " threads";
        for (int64_t i = 0; i < y.numel(); ++i) {
            const double z = product.value_as_double(i) + bias.value_as_double(i % 601);
            ASSERT_NEAR(y.value_as_double(i), z / (1.0 + std::exp(-z)), 1e-4 * (1.0 + std::abs(z)))
                << threads << " threads at " << i;
        }
    }
}

// ---- MatMulInteger -------------------------------------------------------------------------------------------

TEST(MatMulIntegerOp, ScalarAndPerRowZeroPoints) {
    // onnx backend test "test_matmulinteger": numpy (A - 12) @ B = [[-38, -83], [-44, -98], [-50, -113], [-56, -128]]
    KernelHarness h("MatMulInteger", 10);
    h.input(Tensor::from_doubles(DataType::kUInt8, {4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}))
        .input(Tensor::from_doubles(DataType::kUInt8, {3, 2}, {1, 4, 2, 5, 3, 6}), true)
        .input(Tensor::from_doubles(DataType::kUInt8, {}, {12}))
        .input(Tensor::from_doubles(DataType::kUInt8, {}, {0}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kInt32);
    expect_close(y, {4, 2}, {-38, -83, -44, -98, -50, -113, -56, -128}, 0, 0);
    // numpy: (A - [1, -2][:, None]) @ (B - [3, 0][None, :]) with A = [[-3, 5], [7, -1]], B = [[2, -4], [6, 1]] (int8)
    KernelHarness per_row("MatMulInteger", 10);
    per_row.input(Tensor::from_doubles(DataType::kInt8, {2, 2}, {-3, 5, 7, -1}))
        .input(Tensor::from_doubles(DataType::kInt8, {2, 2}, {2, -4, 6, 1}))
        .input(Tensor::from_doubles(DataType::kInt8, {2}, {1, -2}))
        .input(Tensor::from_doubles(DataType::kInt8, {2}, {3, 0}));
    expect_close(per_row.run()[0], {2, 2}, {16, 20, -6, -35}, 0, 0);
    KernelHarness bad("MatMulInteger", 10);
    bad.input(Tensor::from_doubles(DataType::kInt8, {2, 2}, {1, 2, 3, 4}))
        .input(Tensor::from_doubles(DataType::kInt8, {2, 2}, {1, 2, 3, 4}))
        .input(Tensor::from_doubles(DataType::kUInt8, {}, {1}));
    expect_error([&] { bad.run(); }, "input a_zero_point must have the data type of its operand");
}

// ---- Gemm ---------------------------------------------------------------------------------------------------

/// alpha * op(A) @ op(B) + beta * C (C broadcast), in double.
Tensor naive_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool trans_a, bool trans_b, double alpha, double beta) {
    const int64_t m = trans_a ? a.shape()[1] : a.shape()[0];
    const int64_t k = trans_a ? a.shape()[0] : a.shape()[1];
    const int64_t n = trans_b ? b.shape()[0] : b.shape()[1];
    std::vector<double> y;
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (int64_t p = 0; p < k; ++p) {
                const double av = trans_a ? a.value_as_double(p * m + i) : a.value_as_double(i * k + p);
                const double bv = trans_b ? b.value_as_double(j * k + p) : b.value_as_double(p * n + j);
                acc += av * bv;
            }
            double cv = 0;
            if (c != nullptr) {
                const Shape& cs = c->shape();
                const int64_t rows = cs.size() == 2 ? cs[0] : 1;
                const int64_t cols = cs.empty() ? 1 : cs.back();
                cv = c->value_as_double((rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j));
            }
            y.push_back(alpha * acc + beta * cv);
        }
    }
    return Tensor::from_doubles(DataType::kFloat64, {m, n}, y);
}

TEST(GemmOp, SmallExample) {
    // numpy: 0.5 * np.arange(6.).reshape(2, 3) @ np.arange(6.).reshape(3, 2) + 2 * np.array([1., -1.]) = [[7, 4.5], [16, 18]]
    KernelHarness h("Gemm", 13);
    set_attr(h.node(), "alpha", 0.5f);
    set_attr(h.node(), "beta", 2.0f);
    h.input(f32({2, 3}, arange(6))).input(f32({3, 2}, arange(6)), true).input(f32({2}, {1, -1}));
    expect_close(h.run()[0], {2, 2}, {7, 4.5, 16, 18});
}

TEST(GemmOp, TransposesAlphaBetaAndBroadcastMatchNaiveReference) {
    const int64_t m = 9, k = 21, n = 13;
    const std::vector<Shape> c_shapes = {{}, {1}, {n}, {1, n}, {m, 1}, {m, n}};
    for (int trans_a = 0; trans_a <= 1; ++trans_a) {
        for (int trans_b = 0; trans_b <= 1; ++trans_b) {
            for (std::size_t ci = 0; ci <= c_shapes.size(); ++ci) {  // ci == size: no C
                for (int constant = 0; constant <= 1; ++constant) {
                    const double alpha = ci % 2 == 0 ? 1.0 : 0.75;
                    const double beta = ci % 3 == 0 ? 1.0 : -1.5;
                    SCOPED_TRACE("transA=" + std::to_string(trans_a) + " transB=" + std::to_string(trans_b) +
                                 " C#" + std::to_string(ci) + " constant=" + std::to_string(constant));
                    const Tensor a = random_tensor(trans_a ? Shape{k, m} : Shape{m, k}, 21);
                    const Tensor b = random_tensor(trans_b ? Shape{n, k} : Shape{k, n}, 22);
                    const bool has_c = ci < c_shapes.size();
                    const Tensor c = has_c ? random_tensor(c_shapes[ci], 23) : Tensor();
                    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
                        KernelHarness h("Gemm", 13);
                        set_attr(h.node(), "transA", int64_t{trans_a});
                        set_attr(h.node(), "transB", int64_t{trans_b});
                        set_attr(h.node(), "alpha", static_cast<float>(alpha));
                        set_attr(h.node(), "beta", static_cast<float>(beta));
                        h.input(a.cast(dtype)).input(b.cast(dtype), constant == 1);
                        if (has_c) h.input(c.cast(dtype), constant == 1);
                        const Tensor y = h.run(2, 2)[0];
                        EXPECT_EQ(y.dtype(), dtype);
                        expect_close(y, naive_gemm(a, b, has_c ? &c : nullptr, trans_a, trans_b, alpha, beta),
                                     dtype == DataType::kFloat32 ? 1e-5 : 1e-12, 1e-6);
                    }
                }
            }
        }
    }
}

TEST(GemmOp, LargeConstantWeightLikeLinear) {
    // A torch.nn.Linear export: Gemm(x, W, b, transB=1) with W an initializer.
    const Tensor x = random_tensor({5, 200}, 31), w = random_tensor({300, 200}, 32), b = random_tensor({300}, 33);
    KernelHarness h("Gemm", 13);
    set_attr(h.node(), "transB", int64_t{1});
    h.input(x).input(w, true).input(b, true);
    expect_close(h.run(2, 3)[0], naive_gemm(x, w, &b, false, true, 1.0, 1.0), 1e-5, 1e-5);
}

TEST(GemmOp, ConstantWeightsSplitByColumnsOverThreadsMatchTheProduct) {
    // Large enough for each of 2 and 3 threads to take its own slice of the 601 columns: a Linear
    // layer (transB, C a bias row) with alpha and beta, and the same weights stored K x N; each thread
    // count matches the naive product and repeats its own bits.
    const Tensor x = random_tensor({96, 256}, 34), wt = random_tensor({601, 256}, 35), c = random_tensor({601}, 36);
    Tensor w_kn(DataType::kFloat32, {256, 601});
    for (int64_t p = 0; p < 256; ++p)
        for (int64_t j = 0; j < 601; ++j) w_kn.data_as<float>()[p * 601 + j] = wt.data_as<float>()[j * 256 + p];
    for (bool trans_b : {true, false}) {
        const Tensor expected = naive_gemm(x, trans_b ? wt : w_kn, &c, false, trans_b, 0.5, 2.0);
        for (int threads : {1, 2, 3}) {
            KernelHarness h("Gemm", 13);
            set_attr(h.node(), "transB", int64_t{trans_b ? 1 : 0});
            set_attr(h.node(), "alpha", 0.5f);
            set_attr(h.node(), "beta", 2.0f);
            h.input(x).input(trans_b ? wt : w_kn, true).input(c, true);
            const Tensor y = h.run(threads)[0], again = h.run(threads)[0];
            EXPECT_EQ(0, std::memcmp(y.data(), again.data(), y.nbytes())) << threads << " threads";
            expect_close(y, expected, 1e-4, 1e-4);
        }
    }
}

TEST(MatMulAndGemmOps, FusedActivation) {
    // The runtime's FusedMatMul with Gelu (erf form) and FusedGemm (C, Relu), against the naive product.
    const Tensor a = random_tensor({2, 5, 16}, 61, -2, 2), b = random_tensor({16, 7}, 62), c = random_tensor({7}, 63);
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
        KernelHarness mm("FusedMatMul", 13);
        mm.node().set_domain(ref::kRuntimeDomain);
        set_attr(mm.node(), std::string(ref::kActivationAttr), std::string("Gelu"));
        mm.input(a.cast(dtype)).input(b.cast(dtype), true);
        std::vector<double> gelu;
        for (double v : values_of(naive_matmul(a, b))) gelu.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
        expect_close(mm.run()[0], {2, 5, 7}, gelu, 1e-5, 1e-5);

        const Tensor a2 = random_tensor({5, 16}, 64, -2, 2);
        KernelHarness gemm("FusedGemm", 13);
        gemm.node().set_domain(ref::kRuntimeDomain);
        set_attr(gemm.node(), std::string(ref::kActivationAttr), std::string("Relu"));
        set_attr(gemm.node(), "beta", 0.5f);
        gemm.input(a2.cast(dtype)).input(b.cast(dtype), true).input(c.cast(dtype), true);
        std::vector<double> relu;
        for (double v : values_of(naive_gemm(a2, b, &c, false, false, 1.0, 0.5))) relu.push_back(v > 0 ? v : 0);
        expect_close(gemm.run()[0], {5, 7}, relu, 1e-5, 1e-5);
    }
    KernelHarness ints("FusedMatMul", 13);
    ints.node().set_domain(ref::kRuntimeDomain);
    set_attr(ints.node(), std::string(ref::kActivationAttr), std::string("Relu"));
    ints.input(Tensor(DataType::kInt32, {2, 2})).input(Tensor(DataType::kInt32, {2, 2}));
    expect_error([&] { ints.run(); }, "a fused activation's input has unsupported data type int32");
}

TEST(GemmOp, IntegerTypesAndEmptyInnerDim) {
    // numpy: (np.arange(6).reshape(2, 3) - 2) @ (np.arange(6).reshape(3, 2) * 3) + [100, 200]
    KernelHarness h("Gemm", 13);
    h.input(Tensor::from_doubles(DataType::kInt64, {2, 3}, arange(6, -2)))
        .input(Tensor::from_doubles(DataType::kInt64, {3, 2}, arange(6, 0, 3)))
        .input(Tensor::from_doubles(DataType::kInt64, {2}, {100, 200}));
    const Tensor y = h.run()[0];
    EXPECT_EQ(y.dtype(), DataType::kInt64);
    expect_close(y, {2, 2}, {94, 185, 148, 266}, 0, 0);
    // K = 0: the product is all zeros, so y = beta * C.
    KernelHarness empty("Gemm", 13);
    set_attr(empty.node(), "beta", 3.0f);
    empty.input(Tensor(DataType::kFloat32, {2, 0})).input(Tensor(DataType::kFloat32, {0, 2})).input(f32({2}, {1, 2}));
    expect_close(empty.run()[0], {2, 2}, {3, 6, 3, 6});
    KernelHarness zero("Gemm", 13);
    zero.input(Tensor(DataType::kFloat32, {0, 4})).input(random_tensor({4, 3}, 1), true);
    EXPECT_EQ(zero.run()[0].shape(), (Shape{0, 3}));
}

TEST(GemmOp, RejectsBadAttributesAndShapes) {
    KernelHarness flag("Gemm", 13);
    set_attr(flag.node(), "transA", int64_t{2});
    expect_error([&] { flag.create(); }, "Node 'node' (Gemm): attribute 'transA' must be 0 or 1");
    KernelHarness c("Gemm", 13);
    c.input(random_tensor({2, 3}, 1)).input(random_tensor({3, 4}, 2)).input(random_tensor({3}, 3));
    expect_error([&] { c.run(); }, "input C cannot be broadcast to (M, N) = (2, 4)");
    KernelHarness inner("Gemm", 13);
    set_attr(inner.node(), "transB", int64_t{1});
    inner.input(random_tensor({2, 3}, 1)).input(random_tensor({3, 4}, 2));
    expect_error([&] { inner.run(); }, "inner dimensions do not match (transA = 0, transB = 1)");
    KernelHarness rank("Gemm", 13);
    rank.input(random_tensor({2, 3}, 1)).input(random_tensor({2, 3, 4}, 2), true);
    expect_error([&] { rank.create(); }, "input B must be a matrix (rank 2)");
}

// ---- com.microsoft.FusedMatMul, against ONNX Runtime's CPU kernel -----------------------------------

// FusedMatMul of A and B (float32 inputs of the given shapes) with `attributes` set; output "y".
void expect_fused_matmul_matches_onnxrt(const Shape& a, const Shape& b,
                                        const std::vector<std::pair<std::string, int64_t>>& flags, float alpha) {
    ModelBuilder builder(17);
    builder.opset_import("com.microsoft", 1);
    builder.input("a", DataType::kFloat32, a);
    builder.input("b", DataType::kFloat32, b);
    onnx::NodeProto& node = builder.node("FusedMatMul", {"a", "b"}, {"y"}, "fused", "com.microsoft");
    for (const auto& [name, value] : flags) set_attr(node, name, value);
    set_attr(node, "alpha", alpha);
    builder.output("y", DataType::kFloat32, Shape{}, false);
    TensorMap feed;
    feed.set("a", random_tensor(a, 31, -2.0f, 2.0f));
    feed.set("b", random_tensor(b, 32, -2.0f, 2.0f));
    expect_matches_onnxrt(builder, feed, 1e-5, 1e-5);
}

TEST(FusedMatMul, TransposesScaleAndBatchesMatchOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    expect_fused_matmul_matches_onnxrt({3, 5}, {5, 4}, {}, 1.0f);
    expect_fused_matmul_matches_onnxrt({5, 3}, {5, 4}, {{"transA", 1}}, 0.5f);
    // Attention scores: q k^T / sqrt(d), k batched like q.
    expect_fused_matmul_matches_onnxrt({2, 3, 6, 8}, {2, 3, 7, 8}, {{"transB", 1}}, 0.125f);
    expect_fused_matmul_matches_onnxrt({4, 5, 3}, {4, 4, 5}, {{"transA", 1}, {"transB", 1}}, 2.0f);
    // B broadcast over A's batch.
    expect_fused_matmul_matches_onnxrt({2, 3, 6}, {6, 4}, {}, 1.5f);
    // Batch transposes: the first dimension moves before the last.
    expect_fused_matmul_matches_onnxrt({3, 2, 4}, {2, 4, 5}, {{"transBatchA", 1}}, 1.0f);
    expect_fused_matmul_matches_onnxrt({2, 3, 4}, {5, 2, 4}, {{"transBatchB", 1}, {"transB", 1}}, 1.0f);
}

TEST(FusedMatMul, ATransposeItsRankCannotTakeIsOneLine) {
    EXPECT_EQ(error_message<ModelError>([] {
                  OpTester("FusedMatMul", 17, "com.microsoft")
                      .input(random_tensor({3, 4}, 1))
                      .input(random_tensor({4, 5}, 2))
                      .attr("transBatchA", int64_t{1})
                      .run();
              }),
              "Node 'node' (FusedMatMul): input A of shape (3, 4) cannot be transposed as transBatchA asks (rank 3 or "
              "more needed)");
}

// ---- com.microsoft.FusedGemm -------------------------------------------------------------------------

TEST(FusedGemm, GemmThenEachActivationMatchesOnnxRuntime) {
    POLYGRAPHY_SKIP_WITHOUT_ONNXRUNTIME();
    struct Case {
        std::string activation;
        std::vector<std::pair<std::string, float>> params;
    };
    const std::vector<Case> cases = {{"Relu", {}},
                                     {"LeakyRelu", {{"activation_alpha", 0.2f}}},
                                     {"Tanh", {}},
                                     {"Sigmoid", {}},
                                     {"HardSigmoid", {{"activation_alpha", 0.3f}, {"activation_beta", 0.4f}}},
                                     {"Elu", {{"activation_alpha", 0.5f}}},
                                     {"Selu", {{"activation_alpha", 1.5f}, {"activation_gamma", 1.25f}}},
                                     {"Softplus", {}},
                                     {"Softsign", {}},
                                     {"ThresholdedRelu", {{"activation_alpha", 0.25f}}}};
    for (const Case& c : cases) {
        SCOPED_TRACE(c.activation);
        ModelBuilder builder(17);
        builder.opset_import("com.microsoft", 1);
        builder.input("a", DataType::kFloat32, Shape{6, 5});
        builder.initializer("b", random_tensor({4, 5}, 41));
        builder.initializer("c", random_tensor({4}, 42));
        onnx::NodeProto& node = builder.node("FusedGemm", {"a", "b", "c"}, {"y"}, "gemm", "com.microsoft");
        set_attr(node, "transB", int64_t{1});
        set_attr(node, "alpha", 0.75f);
        set_attr(node, "activation", c.activation);
        for (const auto& [name, value] : c.params) set_attr(node, name, value);
        builder.output("y", DataType::kFloat32, Shape{6, 4});
        TensorMap feed;
        feed.set("a", random_tensor({6, 5}, 43, -2.0f, 2.0f));
        expect_matches_onnxrt(builder, feed, 1e-5, 1e-5);
    }
}

TEST(FusedGemm, AnActivationOnnxRuntimeDoesNotFuseOrWithoutItsParametersIsOneLine) {
    EXPECT_EQ(error_message<ModelError>([] {
                  OpTester("FusedGemm", 17, "com.microsoft")
                      .input(random_tensor({2, 3}, 1))
                      .input(random_tensor({3, 2}, 2))
                      .attr("activation", "LeakyRelu")
                      .run();
              }),
              "Node 'node' (FusedGemm): activation 'LeakyRelu' needs the attribute 'activation_alpha'");
    EXPECT_EQ(error_message<ModelError>([] {
                  OpTester("FusedGemm", 17, "com.microsoft")
                      .input(random_tensor({2, 3}, 1))
                      .input(random_tensor({3, 2}, 2))
                      .attr("activation", "Swish")
                      .run();
              }),
              "Node 'node' (FusedGemm): attribute 'activation' is 'Swish'; expected Relu, LeakyRelu, Tanh, Sigmoid, "
              "HardSigmoid, Elu, Selu, Softplus, Softsign or ThresholdedRelu");
}

}  // namespace
}  // namespace polygraphy::testing
