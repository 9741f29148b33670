#include "backend/ref/thread_budget.h"

#include <gtest/gtest.h>

namespace polygraphy::ref {
namespace {

TEST(ThreadBudget, UsesTheCoresOtherRunnableThreadsLeaveIdle) {
    EXPECT_EQ(idle_core_threads(2, 0), 2);  // nothing else runs
    EXPECT_EQ(idle_core_threads(2, 1), 1);  // one core busy elsewhere
    EXPECT_EQ(idle_core_threads(2, 2), 1);  // both busy: never fewer than 1
    EXPECT_EQ(idle_core_threads(16, 4), 12);
    EXPECT_EQ(idle_core_threads(16, -3), 16);  // a count below zero (a race between two reads) is none
    EXPECT_EQ(idle_core_threads(1, 40), 1);
}

TEST(ThreadBudget, PlansForALoadOnlyWhenTwoReadingsInARowSeeIt) {
    EXPECT_EQ(lasting_others(0, 1), 0);  // a short-lived task caught once
    EXPECT_EQ(lasting_others(1, 0), 0);  // gone again
    EXPECT_EQ(lasting_others(1, 1), 1);  // a lasting load
    EXPECT_EQ(lasting_others(2, 3), 2);
    EXPECT_EQ(lasting_others(-1, -1), -1);  // /proc/loadavg unreadable: every core
}

TEST(ThreadBudget, ReadsAThreadsStateAfterItsName) {
    EXPECT_TRUE(stat_says_running("1234 (polygraphy) R 1 1234 1234 0 -1"));
    EXPECT_FALSE(stat_says_running("1234 (polygraphy) S 1 1234 1234 0 -1"));
    EXPECT_TRUE(stat_says_running("99 (a) b (c) R 1 2"));  // a name with spaces and parentheses
    EXPECT_FALSE(stat_says_running("99 (R) S 1 2"));
    EXPECT_FALSE(stat_says_running(""));
    EXPECT_FALSE(stat_says_running("99 (name)"));
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
