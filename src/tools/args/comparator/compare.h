// Options of the comparison functions (Polygraphy's CompareFuncSimpleArgs / CompareFuncIndicesArgs).
#pragma once

#include <string>
#include <vector>

#include "polygraphy/comparator/comparator.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `--no-shape-check`, `--rtol/--rel-tol [out:]v...`, `--atol/--abs-tol [out:]v...`,
/// `--check-error-stat [out:]{elemwise,max,mean,median,quantile}...`, `--error-quantile [out:]q...`,
/// `--infinities-compare-equal`; heatmap/plot options are refused (no plotting in this build).
class CompareFuncSimpleArgs : public ArgGroup {
public:
    std::string title() const override { return "Comparison Function: `simple`"; }
    std::string description() const override {
        return "Options related to the `CompareFunc.simple` comparison function.";
    }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Adds nothing itself: ComparatorCompareArgs puts these options in the job's comparison.
    bool add_to_job(RunJob& job) const override;

    /// Options for compare_func::simple (fail_fast is filled in by ComparatorCompareArgs).
    const SimpleCompareOptions& compare_options() const { return options_; }
    /// dests of this group's options (ComparatorCompareArgs warns when they are given for another function).
    std::vector<std::string> option_dests() const;

private:
    SimpleCompareOptions options_;
};

/// `--index-tolerance [out:]N...` (for `--compare indices`; default 0).
class CompareFuncIndicesArgs : public ArgGroup {
public:
    std::string title() const override { return "Comparison Function: `indices`"; }
    std::string description() const override {
        return "Options related to the `CompareFunc.indices` comparison function.";
    }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Adds nothing itself: ComparatorCompareArgs puts these tolerances in the job's comparison.
    bool add_to_job(RunJob& job) const override;

    /// `--index-tolerance` per output ("" = default).
    const OrderedMap<int64_t>& index_tolerance() const { return index_tolerance_; }

private:
    OrderedMap<int64_t> index_tolerance_;
};

}  // namespace polygraphy::tools
