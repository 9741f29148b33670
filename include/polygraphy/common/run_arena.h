// RunArena: the large tensor buffers of repeated runs, placed by a plan made from the run before,
// like ONNX Runtime's memory pattern.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace polygraphy {

/// Serves the large tensor buffers of a repeated computation (a session's runs) from one block that
/// stays mapped between runs. Without it, glibc maps a network's largest activations afresh on every
/// run (its mmap threshold follows the largest block freed so far), and the page faults cost
/// milliseconds per run.
///
/// The first run allocates from malloc and records each buffer's size and lifetime. Its plan packs
/// those buffers into one block, reusing memory whose buffer was freed before, as an allocator would.
/// Later runs that allocate the same sizes in the same order get their planned places. Buffers still
/// alive when a run ends (the results) come from malloc. A run that differs (other shapes, another
/// branch taken) gets malloc for the rest of its buffers and becomes the next plan. A place whose
/// memory is still in use is never handed out: that buffer comes from malloc instead.
class RunArena {
public:
    /// Smaller buffers come from malloc, whose free lists serve them warm and without page faults.
    static constexpr std::size_t kMinBytes = 32 * 1024;
    /// A run with more large buffers than this (a long Loop) is not planned, and the arena stops.
    static constexpr std::size_t kMaxBuffers = 4096;

    /// `max_block_bytes`: a plan whose block would be larger is not used, and the arena stops
    /// (0: a quarter of tensor_memory_limit()).
    explicit RunArena(std::size_t max_block_bytes = 0);
    ~RunArena();
    RunArena(const RunArena&) = delete;
    RunArena& operator=(const RunArena&) = delete;

    /// What a run did, for tests and logs.
    struct Stats {
        std::size_t buffers = 0;      ///< large buffers allocated
        std::size_t from_block = 0;   ///< of them, served from the planned block
        std::size_t block_bytes = 0;  ///< size of the current plan's block (0: none)
        bool replanned = false;       ///< the run differed from the plan and became the next one
        bool stopped = false;         ///< the arena no longer plans (too many buffers, block too large)
    };
    /// What the last finished run did.
    Stats last_run() const;

    /// Makes tensors allocated on this thread use the arena until destroyed: one run. Does nothing
    /// when this thread already has an arena (a nested graph belongs to its caller's run) or when
    /// another thread is running with this one.
    class Scope {
    public:
        /// Starts a run with `arena` on this thread (where it applies, see above).
        explicit Scope(RunArena& arena);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        bool installed_ = false;
        RunArena& arena_;
    };

    struct State;  ///< The plan, the block and the current run's record (run_arena.cpp).

private:
    std::shared_ptr<State> state_;
};

namespace detail {
/// A buffer of `nbytes` (a multiple of 64) for a tensor, 64-byte aligned, from the arena installed on
/// this thread; nullptr when there is none or the buffer is small (the caller allocates it then).
std::shared_ptr<void> allocate_in_run_arena(std::size_t nbytes, bool zero_fill);
}  // namespace detail

}  // namespace polygraphy
