// Private helpers of the kernels: 8-float vectors compiled for AVX-512 and AVX2 (and a baseline
// fallback), exp and SiLU on them (and on 16-float vectors in code built for AVX-512: on AVX2 such a
// vector spills). Shared by the
// depthwise convolution's store and the SiLU pass of a fused activation; dot products (attention,
// block-quantized products of few rows).
#pragma once

#include <cstdint>

namespace polygraphy::ref {

/// 8 floats: one AVX2 register (half an AVX-512 one, two SSE ones). A wider GCC vector type is not
/// kept in registers on AVX2: a 16-float version spilled every accumulator to the stack (perf
/// annotate) and made a whole mobilenet_v2 run at 1 thread twice as slow (BENCHMARKS.md).
/// aligned(4): loads and stores may be unaligned.
/// Vector types of kLanes floats and int32s. GCC drops a vector type's attributes when it is a
/// template argument (it becomes a plain float), so templates take the lane count instead.
template <int kLanes>
struct Lanes {
    typedef float Float __attribute__((vector_size(kLanes * sizeof(float)), aligned(4)));
    typedef int32_t Int __attribute__((vector_size(kLanes * sizeof(int32_t)), aligned(4)));
};
typedef Lanes<8>::Float Float8Lanes;

// target_clones selects the version through an ifunc resolver, which the dynamic loader runs while
// relocating the library. Under ThreadSanitizer that resolver is instrumented and crashes because
// the sanitizer is not initialised yet (clang 14), so ThreadSanitizer builds keep the default version.
#if defined(__SANITIZE_THREAD__)
#define POLYGRAPHY_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POLYGRAPHY_THREAD_SANITIZER 1
#endif
#endif
#ifdef POLYGRAPHY_THREAD_SANITIZER
#define POLYGRAPHY_VECTOR_CLONES
#else
// Whole ISA levels, not single extensions: a clone for "avx2" or "avx512f" alone has no FMA, so
// every multiply-add would be two instructions.
#define POLYGRAPHY_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

// The helpers below work on vectors in place and are always inlined: so they are compiled for the
// AVX-512/AVX2 clones that call them, and no vector is passed by value (its ABI differs per target).

/// t = exp(t) per lane (Cephes' expf: t = n ln2 + r, a degree-6 polynomial in r, then 2^n through
/// the exponent bits), within ~2 ulps; t is clamped to [-87, 88] first, so the result is finite.
template <int kLanes>
__attribute__((always_inline)) inline void exp_in_place(typename Lanes<kLanes>::Float& t) {
    using V = typename Lanes<kLanes>::Float;
    using IntLanes = typename Lanes<kLanes>::Int;
    t = t > -87.0f ? t : V{} - 87.0f;  // a NaN becomes -87 here: SiLU keeps it through its numerator
    t = t < 88.0f ? t : V{} + 88.0f;
    constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to an integer
    const V n = (t * 1.44269504088896341f + kRound) - kRound;
    const V r = t - n * 0.693359375f + n * 2.12194440e-4f;  // ln 2 in two parts, so r stays exact
    V p = V{} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const IntLanes bits = (__builtin_convertvector(n, IntLanes) + 127) << 23;
    // A vector cast keeps the bits in the register (a memcpy went through the stack).
    t = (p * r * r + r + 1.0f) * (V)bits;
}

/// v = v / (1 + exp(-v)) per lane (SiLU, as oneDNN's swish); exp within ~2 ulps, so the result is
/// within a few ulps of the exact value. Special values as x * Sigmoid(x) gives them: NaN stays
/// NaN, +inf stays +inf, and -inf gives NaN (-inf * 0; the clamped exp would give -inf).
template <int kLanes>
__attribute__((always_inline)) inline void silu_lanes(typename Lanes<kLanes>::Float& v) {
    using V = typename Lanes<kLanes>::Float;
    V e = -v;
    exp_in_place<kLanes>(e);
    const V minus_infinity = V{} - __builtin_inff();
    v = v == minus_infinity ? V{} + __builtin_nanf("") : v / (e + 1.0f);
}

/// y[i] = SiLU(y[i]) for i < n, through silu_lanes() (the tail too, so every element gets the same
/// arithmetic), on 16-float vectors where the CPU has AVX-512 (the same arithmetic per lane).
/// Much faster here than oneDNN's swish, as a pass or as a convolution's post-op.
void silu_in_place(float* y, int64_t n);

/// y[i] = exp(y[i] - shift) for i < n (exp_in_place: within ~2 ulps, arguments clamped to [-87, 88], so
/// exp(-inf) gives about 1e-38, not 0), vectorized (a softmax's numerators); returns their sum in double.
double exp_shifted_in_place(float* y, int64_t n, float shift);

/// The sum of a[i] * b[i] for i < n, in partial sums whose order depends only on n (64 lanes where the
/// CPU has AVX-512, else 16), so that the loop runs in vectors without -ffast-math and gives the same
/// bits on every call.
float dot_product(const float* a, const float* b, int64_t n);

}  // namespace polygraphy::ref
