// How a compare function learns that it sees one slice of an iteration's outputs (SlicedComparison).
#pragma once

#include "polygraphy/comparator/comparator.h"

namespace polygraphy::comparator_detail {

/// While one lives on this thread, the compare functions built on run_comparison (simple, indices)
/// leave each iteration's verdict line ("PASSED | All outputs matched | ...") to the Comparator,
/// which logs it once the iteration's last slice is compared, and note that they did. With
/// `partial`, the outputs are a slice of the iteration: per-output settings that name none of them
/// are not warned about.
class SliceContext {
public:
    explicit SliceContext(bool partial);
    ~SliceContext();
    SliceContext(const SliceContext&) = delete;
    SliceContext& operator=(const SliceContext&) = delete;

    /// Whether the compare function left the verdict to the caller.
    bool summary_deferred() const { return summary_deferred_; }

    /// The context of this thread, or nullptr outside any.
    static SliceContext* current();
    /// Called by run_comparison in place of logging the verdict.
    void defer_summary() { summary_deferred_ = true; }
    /// Whether the outputs are a slice of the iteration.
    bool partial() const { return partial_; }

private:
    bool partial_;
    bool summary_deferred_ = false;
    SliceContext* previous_;
};

/// Logs the verdict of one iteration's comparison, as run_comparison does.
void log_iteration_summary(const IterationCompareResult& iteration);

}  // namespace polygraphy::comparator_detail
