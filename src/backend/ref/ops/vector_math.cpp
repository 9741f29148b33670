#include "backend/ref/ops/vector_math.h"

#include <algorithm>

namespace polygraphy::ref {

POLYGRAPHY_VECTOR_CLONES void silu_in_place(float* y, int64_t n) {
    constexpr int64_t kLanes = 8;
    int64_t i = 0;
    // Loads and stores through the vector type (aligned(4) allows any address): a memcpy into a
    // vector went through the stack in two halves and stalled on store forwarding, 5x slower.
    for (; i + kLanes <= n; i += kLanes) {
        Float8Lanes& v = *reinterpret_cast<Float8Lanes*>(y + i);
        Float8Lanes lanes = v;
        silu_lanes(lanes);
        v = lanes;
    }
    if (i == n) return;
    Float8Lanes tail{};
    std::copy(y + i, y + n, reinterpret_cast<float*>(&tail));
    silu_lanes(tail);
    std::copy(reinterpret_cast<const float*>(&tail), reinterpret_cast<const float*>(&tail) + (n - i), y + i);
}

}  // namespace polygraphy::ref
