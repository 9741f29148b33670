// The vectorized SiLU of src/backend/ref/compute/vector_math.h: every element, the tail after the last
// whole vector included, within a few ulps of x / (1 + exp(-x)) in double; special values as
// x * Sigmoid(x) gives them (NaN and -inf give NaN, +inf stays).
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "backend/ref/compute/vector_math.h"

namespace polygraphy::ref {
namespace {

TEST(VectorMath, SiluOfEveryElementIsWithinAFewUlpsAndKeepsNaN) {
    for (int64_t n : {0, 1, 7, 8, 13, 64, 1001}) {
        std::vector<float> x(static_cast<std::size_t>(n));
        for (int64_t i = 0; i < n; ++i)
            x[static_cast<std::size_t>(i)] = -20.0f + 40.0f * static_cast<float>(i) / 997.0f;
        if (n > 5) {
            x[3] = std::numeric_limits<float>::quiet_NaN();
            x[4] = -std::numeric_limits<float>::infinity();
            x[5] = std::numeric_limits<float>::infinity();
        }
        std::vector<float> y = x;
        silu_in_place(y.data(), n);
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double v = x[i];
            if (std::isnan(v) || v == -std::numeric_limits<double>::infinity()) {  // as x * Sigmoid(x)
                EXPECT_TRUE(std::isnan(y[i])) << i;
                continue;
            }
            if (std::isinf(v)) {
                EXPECT_EQ(y[i], v);
                continue;
            }
            const double expected = v / (1.0 + std::exp(-v));
            EXPECT_NEAR(y[i], expected, 4 * std::numeric_limits<float>::epsilon() * std::max(1.0, std::abs(expected)))
                << "n " << n << ", x " << v;
        }
    }
}

}  // namespace
}  // namespace polygraphy::ref
