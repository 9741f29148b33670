// Text summaries of saved inputs and RunResults, as `polygraphy inspect data` prints them.
#pragma once

#include <string>

#include "polygraphy/common/run_results.h"
#include "polygraphy/common/numpy_print.h"
#include "polygraphy/comparator/stats.h"

namespace polygraphy {

/// What `inspect data` prints.
struct DataSummaryOptions {
    bool all_iterations = false;  ///< `--all`: every iteration, each under `-- Iteration: N`; else the first
    bool show_values = false;     ///< `--show-values`: the arrays as numpy prints them
    bool histogram = false;       ///< `--histogram`
    numpy::PrintOptions print;    ///< `--num-items`, `--line-width`
};

/// `==== Run Results (N runners) ====`, then per runner `---- <name> (K iterations) ----` (names
/// padded to the longest) and per tensor `<name> [dtype=..., shape=...] | Stats: ...`, with
/// histogram and values indented below. Exactly Polygraphy's layout, blank lines included.
std::string str_from_run_results(const RunResults& results, const DataSummaryOptions& options);

/// `==== Data (N iterations) ====` and the tensors of the inputs file, laid out as above.
std::string str_from_inputs(const InputList& inputs, const DataSummaryOptions& options);

}  // namespace polygraphy
