#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "polygraphy/common/run_arena.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy {
namespace {

// A float tensor of `kib` KiB, uninitialized (like a kernel's output).
Tensor buffer(int64_t kib) {
    return Tensor::uninitialized(DataType::kFloat32, {kib * 256});
}

void fill(Tensor& tensor, float value) {
    std::fill_n(tensor.data_as<float>(), tensor.numel(), value);
}

bool all_equal(const Tensor& tensor, float value) {
    const float* data = tensor.data_as<float>();
    return std::all_of(data, data + tensor.numel(), [&](float x) { return x == value; });
}

// One "run": a temporary, a buffer computed from it, the temporary freed, a second temporary that
// fits where the first was, and a result that outlives the run.
struct RunPointers {
    const void* first = nullptr;
    const void* reuse = nullptr;
};
Tensor typical_run(RunArena& arena, RunPointers* pointers = nullptr) {
    RunArena::Scope scope(arena);
    Tensor first = buffer(64);
    fill(first, 1.0f);
    Tensor second = buffer(128);
    fill(second, 2.0f);
    if (pointers) pointers->first = first.data();
    first = Tensor();
    Tensor reuse = buffer(64);
    if (pointers) pointers->reuse = reuse.data();
    fill(reuse, 3.0f);
    Tensor result = buffer(32);
    fill(result, 4.0f);
    return result;
}

TEST(RunArena, LaterRunsGetTheirBuffersFromThePlannedBlock) {
    RunArena arena;
    typical_run(arena);
    RunArena::Stats first = arena.last_run();
    EXPECT_EQ(first.buffers, 4u);
    EXPECT_EQ(first.from_block, 0u);
    EXPECT_TRUE(first.replanned);
    // The temporaries need 64 + 128 KiB at most: the second 64 KiB buffer reuses the first's place.
    EXPECT_EQ(first.block_bytes, std::size_t{192} * 1024);

    for (int run = 0; run < 3; ++run) {
        RunPointers pointers;
        Tensor result = typical_run(arena, &pointers);
        RunArena::Stats later = arena.last_run();
        EXPECT_EQ(later.buffers, 4u);
        EXPECT_EQ(later.from_block, 3u);  // the result comes from malloc
        EXPECT_FALSE(later.replanned);
        EXPECT_EQ(pointers.reuse, pointers.first);
        EXPECT_TRUE(all_equal(result, 4.0f));
    }
}

TEST(RunArena, ZeroFilledTensorsAreZeroInReusedMemory) {
    RunArena arena;
    for (int run = 0; run < 3; ++run) {
        RunArena::Scope scope(arena);
        Tensor dirty = buffer(64);
        fill(dirty, 7.0f);
        dirty = Tensor();
        Tensor zeros(DataType::kFloat32, {64 * 256});
        EXPECT_TRUE(all_equal(zeros, 0.0f)) << "run " << run;
    }
    EXPECT_EQ(arena.last_run().from_block, 2u);
}

TEST(RunArena, ResultsOfEarlierRunsAreNeverOverwritten) {
    RunArena arena;
    std::vector<Tensor> results;
    for (int run = 0; run < 4; ++run) {
        RunArena::Scope scope(arena);
        Tensor temporary = buffer(256);
        fill(temporary, static_cast<float>(100 + run));
        Tensor result = buffer(256);
        fill(result, static_cast<float>(run));
        results.push_back(result);
    }
    for (int run = 0; run < 4; ++run) EXPECT_TRUE(all_equal(results[run], static_cast<float>(run))) << run;
}

TEST(RunArena, ATemporaryKeptByTheCallerIsNotOverwrittenByTheNextRun) {
    RunArena arena;
    Tensor kept;
    for (int run = 0; run < 6; ++run) {
        RunArena::Scope scope(arena);
        Tensor temporary = buffer(256);
        fill(temporary, static_cast<float>(run));
        if (run == 2) kept = temporary;  // planned as a temporary, but it outlives run 2
    }
    EXPECT_TRUE(all_equal(kept, 2.0f));
}

TEST(RunArena, APlaceStillInUseIsNotHandedOut) {
    RunArena arena;
    for (int run = 0; run < 2; ++run) {
        // The plan: two 64 KiB buffers in the place of a freed 128 KiB one, at its start and middle.
        RunArena::Scope scope(arena);
        Tensor large = buffer(128);
        large = Tensor();
        Tensor at_start = buffer(64);
        Tensor in_middle = buffer(64);
        if (run == 1) {
            ASSERT_EQ(static_cast<const char*>(in_middle.data()) - static_cast<const char*>(at_start.data()),
                      64 * 1024);
        }
    }
    // Same sizes in the same order, but the large buffer lives on while the other two are allocated.
    RunArena::Scope scope(arena);
    Tensor large = buffer(128);
    fill(large, 1.0f);
    Tensor at_start = buffer(64);
    fill(at_start, 2.0f);
    Tensor in_middle = buffer(64);
    fill(in_middle, 3.0f);
    EXPECT_TRUE(all_equal(large, 1.0f));
    EXPECT_TRUE(all_equal(at_start, 2.0f));
}

TEST(RunArena, ARunThatDiffersBecomesTheNextPlan) {
    RunArena arena;
    typical_run(arena);
    typical_run(arena);
    ASSERT_FALSE(arena.last_run().replanned);
    auto other_run = [&] {
        RunArena::Scope scope(arena);
        Tensor first = buffer(64);
        Tensor larger = buffer(512);  // differs from the plan's 128 KiB
        Tensor after = buffer(64);
        fill(after, 5.0f);
        EXPECT_TRUE(all_equal(after, 5.0f));
    };
    other_run();
    EXPECT_TRUE(arena.last_run().replanned);
    EXPECT_EQ(arena.last_run().from_block, 1u);  // only the buffer before the difference
    other_run();
    EXPECT_FALSE(arena.last_run().replanned);
    EXPECT_EQ(arena.last_run().from_block, 3u);
    EXPECT_EQ(arena.last_run().block_bytes, std::size_t{640} * 1024);
}

TEST(RunArena, SmallBuffersComeFromMalloc) {
    RunArena arena;
    for (int run = 0; run < 2; ++run) {
        RunArena::Scope scope(arena);
        Tensor small = Tensor::uninitialized(DataType::kFloat32, {RunArena::kMinBytes / 4 - 16});
        Tensor large = buffer(64);
    }
    EXPECT_EQ(arena.last_run().buffers, 1u);
}

TEST(RunArena, StopsWhenThePlanNeedsMoreThanTheLimit) {
    RunArena arena(/*max_block_bytes=*/std::size_t{100} * 1024);
    for (int run = 0; run < 3; ++run) {
        RunArena::Scope scope(arena);
        Tensor first = buffer(64);
        Tensor second = buffer(64);
        fill(second, 1.0f);
        EXPECT_TRUE(all_equal(second, 1.0f));
    }
    EXPECT_TRUE(arena.last_run().stopped);
    EXPECT_EQ(arena.last_run().block_bytes, 0u);
    EXPECT_EQ(arena.last_run().from_block, 0u);
}

TEST(RunArena, StopsWhenARunHasTooManyLargeBuffers) {
    RunArena arena;
    {
        RunArena::Scope scope(arena);
        for (std::size_t i = 0; i <= RunArena::kMaxBuffers; ++i) buffer(32);
    }
    EXPECT_TRUE(arena.last_run().stopped);
    EXPECT_EQ(arena.last_run().buffers, RunArena::kMaxBuffers);
}

TEST(RunArena, ANestedScopeAndOtherThreadsLeaveTheRunAlone) {
    RunArena arena;
    RunArena inner;
    for (int run = 0; run < 2; ++run) {
        RunArena::Scope scope(arena);
        Tensor first = buffer(64);
        {
            RunArena::Scope nested(inner);  // this thread's run already has an arena
            Tensor in_nested = buffer(64);
        }
        std::thread other([&] {
            RunArena::Scope concurrent(arena);  // another thread is running with it: not installed
            Tensor elsewhere = buffer(64);
        });
        other.join();
    }
    EXPECT_EQ(arena.last_run().buffers, 2u);
    EXPECT_EQ(arena.last_run().from_block, 2u);
    EXPECT_EQ(inner.last_run().buffers, 0u);
}

TEST(RunArena, TensorsOutliveTheArena) {
    Tensor survivor;
    {
        RunArena arena;
        for (int run = 0; run < 2; ++run) {
            RunArena::Scope scope(arena);
            Tensor temporary = buffer(64);
            if (run == 1) survivor = temporary;
        }
    }
    fill(survivor, 9.0f);
    EXPECT_TRUE(all_equal(survivor, 9.0f));
}

}  // namespace
}  // namespace polygraphy
