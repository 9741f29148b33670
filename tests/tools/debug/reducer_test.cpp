#include "tools/debug/reducer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "polygraphy/common/exception.h"

namespace polygraphy::tools {
namespace {

using ::testing::ElementsAre;

bool contains(const NodeSet& nodes, std::size_t node) {
    return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

// Runs the search with `fails` deciding each candidate; checks every candidate is a non-empty
// ascending set of valid nodes.
Reducer run(std::size_t n, Reducer::Options options, const std::function<bool(const NodeSet&)>& fails) {
    Reducer reducer(n, options);
    std::size_t guard = 0;
    while (const auto candidate = reducer.candidate()) {
        EXPECT_FALSE(candidate->empty());
        EXPECT_TRUE(std::is_sorted(candidate->begin(), candidate->end()));
        EXPECT_LT(candidate->back(), n);
        reducer.report(!fails(*candidate));
        if (++guard > 10 * n + 10) {
            ADD_FAILURE() << "the search does not end";
            break;
        }
    }
    return reducer;
}

std::size_t ceil_log2(std::size_t n) {
    std::size_t bits = 0;
    while ((std::size_t{1} << bits) < n) ++bits;
    return bits;
}

TEST(Reducer, BisectFindsTheFailingNodeInLogarithmicChecks) {
    for (std::size_t n = 1; n <= 70; ++n) {
        for (std::size_t x = 0; x < n; ++x) {
            const Reducer reducer = run(n, {}, [&](const NodeSet& c) { return contains(c, x); });
            ASSERT_TRUE(reducer.done());
            EXPECT_FALSE(reducer.no_failure());
            EXPECT_EQ(reducer.best_bad(), NodeSet{x}) << "n=" << n << " x=" << x;
            EXPECT_LE(reducer.checks(), 1 + 2 * ceil_log2(n)) << "n=" << n << " x=" << x;
        }
    }
}

TEST(Reducer, BisectCountIsLogarithmicForLargeModels) {
    const Reducer reducer = run(1000, {}, [](const NodeSet& c) { return contains(c, 617); });
    EXPECT_EQ(reducer.best_bad(), NodeSet{617});
    EXPECT_LE(reducer.checks(), 21u);
}

TEST(Reducer, LinearFindsTheFailingNode) {
    Reducer::Options options;
    options.mode = ReduceMode::kLinear;
    for (std::size_t n = 1; n <= 20; ++n) {
        for (std::size_t x = 0; x < n; ++x) {
            const Reducer reducer = run(n, options, [&](const NodeSet& c) { return contains(c, x); });
            EXPECT_EQ(reducer.best_bad(), NodeSet{x});
            EXPECT_LE(reducer.checks(), 2 * n + 1);
        }
    }
}

TEST(Reducer, LinearDropsInteriorNodesThatBisectKeeps) {
    // Fails only when both node 2 and node 7 are present.
    auto fails = [](const NodeSet& c) { return contains(c, 2) && contains(c, 7); };
    const Reducer bisect = run(10, {}, fails);
    EXPECT_THAT(bisect.best_bad(), ElementsAre(2, 3, 4, 5, 6, 7));
    Reducer::Options linear;
    linear.mode = ReduceMode::kLinear;
    EXPECT_THAT(run(10, linear, fails).best_bad(), ElementsAre(2, 7));
}

TEST(Reducer, OriginalModelThatPassesEndsAtOnce) {
    const Reducer reducer = run(8, {}, [](const NodeSet&) { return false; });
    EXPECT_TRUE(reducer.no_failure());
    EXPECT_EQ(reducer.checks(), 1u);
    EXPECT_FALSE(reducer.best_good() == std::nullopt);
}

TEST(Reducer, PhasesCanBeDisabled) {
    Reducer::Options keep_inputs;
    keep_inputs.reduce_inputs = false;
    EXPECT_THAT(run(6, keep_inputs, [](const NodeSet& c) { return contains(c, 3); }).best_bad(), ElementsAre(0, 1, 2, 3));
    Reducer::Options keep_outputs;
    keep_outputs.reduce_outputs = false;
    EXPECT_THAT(run(6, keep_outputs, [](const NodeSet& c) { return contains(c, 3); }).best_bad(), ElementsAre(3, 4, 5));
}

TEST(Reducer, MinGoodIsTheLargestPassingSetSmallerThanTheFailure) {
    // Fails when it holds nodes 4 and 5: the reduced model is {4, 5}; {5} passed on the way.
    const Reducer reducer = run(8, {}, [](const NodeSet& c) { return contains(c, 4) && contains(c, 5); });
    EXPECT_THAT(reducer.best_bad(), ElementsAre(4, 5));
    ASSERT_TRUE(reducer.best_good());
    EXPECT_EQ(reducer.best_good()->size(), 1u);
}

TEST(Reducer, PhasesAreReported) {
    Reducer reducer(4, {});
    EXPECT_EQ(reducer.phase(), "original");
    EXPECT_THAT(*reducer.candidate(), ElementsAre(0, 1, 2, 3));
    reducer.report(false);
    EXPECT_EQ(reducer.phase(), "outputs");
    EXPECT_THAT(*reducer.candidate(), ElementsAre(0, 1));
    EXPECT_EQ(reducer.remaining(), 2u);
}

TEST(Reducer, EmptyModelIsAnError) {
    EXPECT_THROW(Reducer(0, {}), PolygraphyException);
}

TEST(Reducer, ReportAfterTheEndIsABug) {
    Reducer reducer(1, {});
    reducer.report(false);
    ASSERT_TRUE(reducer.done());
    EXPECT_THROW(reducer.report(false), InternalError);
}

}  // namespace
}  // namespace polygraphy::tools
