// Output post-processing options (Polygraphy's ComparatorPostprocessArgs).
#pragma once

#include <string>

#include "polygraphy/comparator/comparator.h"
#include "polygraphy/job/run_job.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `--postprocess/--postprocess-func [<out_name>:]top-<K>[,axis=<axis>]...`: replace outputs by the int64
/// indices of their K largest values along the axis (default -1) before comparing. The key is split on
/// the last ':'; an entry without a key applies to every output not listed; names matching no output
/// are ignored (as in Polygraphy). K must be a positive integer.
///
/// The job applies it to every result (run and loaded) after `--save-outputs` and `--load-outputs`,
/// before comparing and validating (RunJob::postprocess).
class ComparatorPostprocessArgs : public ArgGroup {
public:
    std::string title() const override { return "Comparator Postprocessing"; }
    std::string description() const override { return "Options related to applying postprocessing to outputs."; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Sets the job's post-processing (top_k()).
    bool add_to_job(RunJob& job) const override;

    /// True when `--postprocess` was given.
    bool enabled() const { return !top_k_.empty(); }
    /// Top-K settings per output ("" = every output not listed); empty without `--postprocess`.
    const PerOutput<TopK>& top_k() const { return top_k_; }
    /// postprocess_func::top_k(top_k()); an empty function when `--postprocess` was not given.
    PostprocessFunc postprocess_func() const;

private:
    PerOutput<TopK> top_k_;
};

}  // namespace polygraphy::tools
