#include "backend/ref/thread_budget.h"

#include <gtest/gtest.h>

namespace polygraphy::ref {
namespace {

TEST(ThreadBudget, UsesTheCoresOtherRunnableThreadsLeaveIdle) {
    EXPECT_EQ(idle_core_threads(2, 1), 2);  // only the caller runs
    EXPECT_EQ(idle_core_threads(2, 2), 1);  // one core busy elsewhere
    EXPECT_EQ(idle_core_threads(2, 3), 1);  // both busy: never fewer than 1
    EXPECT_EQ(idle_core_threads(16, 5), 12);
    EXPECT_EQ(idle_core_threads(16, 0), 16);  // a count without the caller is not more than every core
    EXPECT_EQ(idle_core_threads(1, 40), 1);
}

TEST(ThreadBudget, ReadsTheRunnableCountOfProcLoadavg) {
    EXPECT_EQ(runnable_from_loadavg("0.52 1.49 1.81 3/214 12345\n"), 3);
    EXPECT_EQ(runnable_from_loadavg("0.00 0.00 0.00 1/80 7"), 1);
    EXPECT_EQ(runnable_from_loadavg(""), std::nullopt);
    EXPECT_EQ(runnable_from_loadavg("0.52 1.49 1.81"), std::nullopt);
    EXPECT_EQ(runnable_from_loadavg("0.52 1.49 1.81 x/214 1"), std::nullopt);
    EXPECT_EQ(runnable_from_loadavg("0.52 1.49 1.81 /214 1"), std::nullopt);
    EXPECT_EQ(runnable_from_loadavg("0.52 1.49 1.81 3x/214 1"), std::nullopt);
    EXPECT_EQ(runnable_from_loadavg("0.52 1.49 1.81 214 1"), std::nullopt);
}

TEST(ThreadBudget, CurrentLoadGivesAtLeastOneThreadAndAtMostTheCores) {
    for (int cores : {1, 2, 64}) {
        const int threads = threads_for_current_load(cores);
        EXPECT_GE(threads, 1);
        EXPECT_LE(threads, cores);
    }
}

}  // namespace
}  // namespace polygraphy::ref
