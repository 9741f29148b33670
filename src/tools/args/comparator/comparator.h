// Comparator options (Polygraphy's ComparatorRunArgs and ComparatorCompareArgs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "polygraphy/comparator/comparator.h"
#include "polygraphy/job/run_job.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `--warm-up N`, `--use-subprocess`, `--subprocess-timeout SECONDS`, `--save-inputs/--save-input-data
/// PATH`, `--save-outputs/--save-results PATH`, `--shard I/N|auto` (args_util::parse_shard()).
class ComparatorRunArgs : public ArgGroup {
public:
    std::string title() const override { return "Comparator Inference"; }
    std::string description() const override { return "Options related to running inference via Comparator.run()."; }
    std::vector<std::type_index> depends_on() const override;
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Sets the job's inference options, `--save-outputs` and the data loader's `--shard`.
    bool add_to_job(RunJob& job) const override;

    /// Options for Comparator::run (`--warm-up`, `--save-inputs`).
    Comparator::RunOptions run_options() const;
    /// `--save-outputs`.
    const std::optional<std::string>& save_outputs_path() const { return save_outputs_path_; }
    /// `--use-subprocess`: each runner in its own process (job/runner_processes.h).
    bool use_subprocess() const { return use_subprocess_; }
    /// `--subprocess-timeout SECONDS` (only with --use-subprocess).
    const std::optional<double>& subprocess_timeout() const { return subprocess_timeout_; }

private:
    bool use_subprocess_ = false;
    std::optional<double> subprocess_timeout_;
    int warm_up_ = 0;
    std::optional<std::string> save_inputs_path_;
    std::optional<std::string> save_outputs_path_;
    std::optional<DatasetShard> shard_;
};

/// `--validate`, `--fail-fast`, `--compare/--compare-func {simple,indices}`, `--compare-func-script
/// file.py[:func]` (through the Python bridge, polygraphy/tools/python_hooks.h), `--load-outputs/--load-results
/// PATH...`, `--report`, `--model-explorer-node-data`, `--save-summary`, `--session-memory-budget`,
/// `--compare-memory-budget`. Fills the job's comparison with the options of the comparison-function
/// groups.
class ComparatorCompareArgs : public ArgGroup {
public:
    std::string title() const override { return "Comparator Comparisons"; }
    std::string description() const override { return "Options related to inference output comparisons."; }
    std::vector<std::type_index> depends_on() const override;
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Sets the job's loaded outputs, comparison (compare_job()) and `--validate`.
    bool add_to_job(RunJob& job) const override;

    /// `--validate`, `--fail-fast`, `--compare`, `--load-outputs`.
    /// @{
    bool validate() const { return validate_; }
    bool fail_fast() const { return fail_fast_; }
    const std::string& compare_func_name() const { return compare_func_; }
    const std::vector<std::string>& load_outputs_paths() const { return load_outputs_paths_; }
    /// @}
    /// `--report FILE`: where to write per-tensor error figures and the first divergence (HTML or JSON,
    /// by the extension; see save_comparison_report()).
    const std::optional<std::string>& report_path() const { return report_path_; }
    /// `--model-explorer-node-data FILE.json`.
    const std::optional<std::string>& model_explorer_path() const { return model_explorer_path_; }
    /// The comparison the options describe: compare_func::simple with CompareFuncSimpleArgs' options
    /// (collecting histograms when the report is HTML), or compare_func::indices with
    /// CompareFuncIndicesArgs' tolerances (`--compare indices`); where its reports go.
    CompareJob compare_job() const;
    /// build_compare_func(compare_job()).
    CompareFunc compare_func() const;

private:
    bool validate_ = false;
    bool fail_fast_ = false;
    std::string compare_func_ = "simple";
    std::optional<std::string> summary_path_;
    std::optional<std::size_t> session_memory_budget_;
    std::vector<std::string> load_outputs_paths_;
    std::optional<std::string> report_path_;
    std::optional<double> suggest_tolerances_;
    std::optional<std::string> model_explorer_path_;
    std::optional<std::size_t> memory_budget_;
    CompareFunc script_compare_;  // --compare-func-script's function, or empty
};

}  // namespace polygraphy::tools
