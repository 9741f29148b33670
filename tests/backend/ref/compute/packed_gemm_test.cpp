// The runtime's own GEMM for constant weights (src/backend/ref/compute/packed_gemm.h), against a
// double-precision loop, and through the MatMul and Gemm kernels against their unfused forms.
#include "backend/ref/compute/packed_gemm.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../ops/op_test_util.h"
#include "backend/ref/fused_ops.h"

namespace polygraphy::testing {
namespace {

using ref::packed_gemm::PackedMatrix;

std::vector<float> random_values(int64_t count, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> values(static_cast<std::size_t>(count));
    for (float& v : values) v = dist(rng);
    return values;
}

/// y = a (m x k, rows lda apart) times b (element (p, j) at b[p * row_stride + j * col_stride]), in double.
std::vector<double> naive_product(const std::vector<float>& a, int64_t m, int64_t k, int64_t lda,
                                  const std::vector<float>& b, int64_t n, int64_t row_stride, int64_t col_stride) {
    std::vector<double> y(static_cast<std::size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double sum = 0.0;
            for (int64_t p = 0; p < k; ++p) sum += double(a[i * lda + p]) * double(b[p * row_stride + j * col_stride]);
            y[i * n + j] = sum;
        }
    return y;
}

class PackedGemmTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!ref::packed_gemm::available()) GTEST_SKIP() << "this CPU has no AVX2/FMA: MatMul and Gemm use oneDNN";
    }
};

// Every edge of the tiling: rows around the 6-row tile and the 240-row block, depths around the
// 256-deep block, columns around the 16-column panel; weights stored K x N and N x K; A with rows
// further apart than K. The sums are float32 over up to 600 terms of [-1, 1] products.
TEST_F(PackedGemmTest, MatchesADoubleProductAtEveryTileEdge) {
    unsigned seed = 1;
    for (int64_t m : {1, 5, 6, 7, 13, 241})
        for (int64_t k : {1, 3, 255, 256, 257, 600})
            for (int64_t n : {1, 15, 16, 17, 40})
                for (bool transposed : {false, true}) {
                    const int64_t lda = k + 3;
                    const std::vector<float> a = random_values(m * lda, seed++), b = random_values(k * n, seed++);
                    const int64_t row_stride = transposed ? 1 : n, col_stride = transposed ? k : 1;
                    const PackedMatrix packed(b.data(), k, n, row_stride, col_stride, 2);
                    std::vector<float> y(static_cast<std::size_t>(m * n), std::nanf(""));
                    ref::packed_gemm::multiply(a.data(), m, lda, packed, nullptr, y.data(), 2);
                    const std::vector<double> expected = naive_product(a, m, k, lda, b, n, row_stride, col_stride);
                    for (std::size_t i = 0; i < y.size(); ++i)
                        ASSERT_NEAR(y[i], expected[i], 1e-5 * (1.0 + std::sqrt(double(k))))
                            << m << "x" << k << "x" << n << (transposed ? " (N x K)" : "") << " at " << i;
                }
}

// A long K packs fewer rows per block (A's packed rows are capped at 4 MiB): 100 rows of K = 20000
// are three blocks of 36, 36 and 28 rows.
TEST_F(PackedGemmTest, LongDepthTakesSmallerRowBlocks) {
    const int64_t m = 100, k = 20000, n = 17;
    const std::vector<float> a = random_values(m * k, 5), b = random_values(k * n, 6);
    const PackedMatrix packed(b.data(), k, n, n, 1, 2);
    std::vector<float> y(static_cast<std::size_t>(m * n));
    ref::packed_gemm::multiply(a.data(), m, k, packed, nullptr, y.data(), 1);
    const std::vector<double> expected = naive_product(a, m, k, k, b, n, n, 1);
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-5 * std::sqrt(double(k))) << i;
}

// Each element is summed in one order whatever the thread count (split by columns or by rows), and
// the bias is added to the finished sum, as a separate Add node would.
TEST_F(PackedGemmTest, SameBitsAtEveryThreadCountAndTheBiasAddedLast) {
    // 1 row: the single-row kernel, split by groups of panels; 4 rows: too few panels per thread at 3
    // threads, split by rows instead.
    for (int64_t m : {1, 4, 197}) {
        const int64_t k = m == 1 ? 1000 : 300, n = m == 4 ? 40 : 1000;  // 1 x 1000 x 1000: 4 MB of weights
        const std::vector<float> a = random_values(m * k, 11), b = random_values(k * n, 12),
                                 bias = random_values(n, 13);
        const PackedMatrix packed(b.data(), k, n, n, 1, 1);
        std::vector<float> product(static_cast<std::size_t>(m * n));
        ref::packed_gemm::multiply(a.data(), m, k, packed, nullptr, product.data(), 1);
        for (int threads : {1, 2, 3}) {
            std::vector<float> plain(product.size()), with_bias(product.size());
            ref::packed_gemm::multiply(a.data(), m, k, packed, nullptr, plain.data(), threads);
            ref::packed_gemm::multiply(a.data(), m, k, packed, bias.data(), with_bias.data(), threads);
            EXPECT_EQ(0, std::memcmp(plain.data(), product.data(), plain.size() * sizeof(float)))
                << m << " rows, " << threads << " threads";
            for (std::size_t i = 0; i < product.size(); ++i)
                ASSERT_EQ(with_bias[i], product[i] + bias[i % n]) << m << " rows, " << threads << " threads at " << i;
        }
    }
}

// Split by panels, the threads pack each block of A's rows together, a share of its tiles each, and
// compute from the one copy: 100 rows of K = 12000 are two blocks of 54 and 46 rows (the last tile of
// each partial), and 7 panels are split between 2 or 3 threads. The bits are those of 1 thread.
TEST_F(PackedGemmTest, PanelSplitOverSeveralRowBlocksGivesTheBitsOfOneThread) {
    const int64_t m = 100, k = 12000, n = 100;
    const std::vector<float> a = random_values(m * k, 31), b = random_values(k * n, 32), bias = random_values(n, 33);
    const PackedMatrix packed(b.data(), k, n, n, 1, 2);
    std::vector<float> one(static_cast<std::size_t>(m * n));
    ref::packed_gemm::multiply(a.data(), m, k, packed, bias.data(), one.data(), 1);
    const std::vector<double> expected = naive_product(a, m, k, k, b, n, n, 1);
    for (std::size_t i = 0; i < one.size(); ++i)
        ASSERT_NEAR(one[i], expected[i] + bias[i % n], 1e-5 * std::sqrt(double(k))) << i;
    for (int threads : {2, 3}) {
        std::vector<float> y(one.size(), std::nanf(""));
        ref::packed_gemm::multiply(a.data(), m, k, packed, bias.data(), y.data(), threads);
        EXPECT_EQ(0, std::memcmp(y.data(), one.data(), y.size() * sizeof(float))) << threads << " threads";
    }
}

// Where the CPU has AVX-512, pairs of whole tiles and panels (12 x 32) run in its registers; the odd
// tile, the partial one and the narrow last panel take the AVX2 kernel. Every element gets the same
// sums as with AVX2 alone, bit for bit, on 1 and 2 threads.
TEST_F(PackedGemmTest, Avx512TilesGiveTheBitsOfTheAvx2Kernel) {
    if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "this CPU has no AVX-512: only the AVX2 kernel runs";
    unsigned seed = 51;
    for (int64_t m : {6, 12, 13, 19, 128})
        for (int64_t k : {300, 600})
            for (int64_t n : {32, 40, 48, 100}) {
                const std::vector<float> a = random_values(m * k, seed++), b = random_values(k * n, seed++),
                                         bias = random_values(n, seed++);
                const PackedMatrix packed(b.data(), k, n, n, 1, 2);
                for (int threads : {1, 2}) {
                    std::vector<float> avx2(static_cast<std::size_t>(m * n)), widest(avx2.size(), std::nanf(""));
                    ref::packed_gemm::multiply(a.data(), m, k, packed, bias.data(), avx2.data(), threads,
                                               ref::packed_gemm::KernelChoice::kAvx2Only);
                    ref::packed_gemm::multiply(a.data(), m, k, packed, bias.data(), widest.data(), threads);
                    EXPECT_EQ(0, std::memcmp(avx2.data(), widest.data(), avx2.size() * sizeof(float)))
                        << m << "x" << k << "x" << n << ", " << threads << " threads";
                }
            }
}

TEST_F(PackedGemmTest, NanAndInfinityReachTheirRowsAndColumns) {
    const int64_t m = 7, k = 20, n = 18;
    std::vector<float> a = random_values(m * k, 21), b = random_values(k * n, 22);
    a[3 * k + 5] = std::numeric_limits<float>::quiet_NaN();  // row 3 of the result
    b[2 * n + 17] = std::numeric_limits<float>::infinity();  // column 17 (the narrow panel)
    const PackedMatrix packed(b.data(), k, n, n, 1, 1);
    std::vector<float> y(static_cast<std::size_t>(m * n));
    ref::packed_gemm::multiply(a.data(), m, k, packed, nullptr, y.data(), 2);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            const float v = y[i * n + j];
            if (i == 3) {
                EXPECT_TRUE(std::isnan(v)) << i << "," << j;
            } else if (j == 17) {
                EXPECT_TRUE(std::isinf(v)) << i << "," << j;
            } else {
                EXPECT_TRUE(std::isfinite(v)) << i << "," << j;
            }
        }
}

// Through the kernels: a MatMul with a folded bias (and GELU) and a Linear-layer Gemm give the bits of
// the product followed by the Add (and the activation) that the graph wrote.
TEST_F(PackedGemmTest, KernelsGiveTheUnfusedBitsOfProductThenAdd) {
    const Tensor x = random_tensor({2, 30, 64}, 41), w = random_tensor({64, 50}, 42), bias = random_tensor({50}, 43);
    for (int threads : {1, 2}) {
        KernelHarness plain("MatMul", 13);
        plain.input(x).input(w, true);
        const Tensor product = plain.run(threads)[0];
        const Tensor summed = OpTester("Add").input(product).input(bias).run();
        KernelHarness fused("FusedMatMul", 13);
        fused.node().set_domain(ref::kRuntimeDomain);
        fused.input(x).input(w, true).input(bias, true);
        const Tensor y = fused.run(threads)[0];
        ASSERT_EQ(y.shape(), summed.shape());
        EXPECT_EQ(0, std::memcmp(y.data(), summed.data(), y.nbytes())) << threads << " threads";

        const Tensor x2 = random_tensor({30, 64}, 44), wt = random_tensor({50, 64}, 45);
        KernelHarness linear("Gemm", 13);
        set_attr(linear.node(), "transB", int64_t{1});
        linear.input(x2).input(wt, true).input(bias, true);
        KernelHarness no_c("Gemm", 13);
        set_attr(no_c.node(), "transB", int64_t{1});
        no_c.input(x2).input(wt, true);
        const Tensor expected = OpTester("Add").input(no_c.run(threads)[0]).input(bias).run();
        const Tensor got = linear.run(threads)[0];
        EXPECT_EQ(0, std::memcmp(got.data(), expected.data(), got.nbytes())) << threads << " threads";
    }
}

TEST_F(PackedGemmTest, ZeroDepthIsRefusedAsAnInternalError) {
    const float b = 0.0f;
    const PackedMatrix packed(&b, 0, 4, 4, 1, 1);
    const float a = 1.0f;
    float y[4];
    EXPECT_THROW(ref::packed_gemm::multiply(&a, 1, 0, packed, nullptr, y, 1), InternalError);
}

}  // namespace
}  // namespace polygraphy::testing
