// Comparator options (Polygraphy's ComparatorRunArgs and ComparatorCompareArgs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "polygraphy/comparator/comparator.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `--warm-up N`, `--use-subprocess` (refused), `--save-inputs/--save-input-data PATH`,
/// `--save-outputs/--save-results PATH`.
class ComparatorRunArgs : public ArgGroup {
public:
    std::string title() const override { return "Comparator Inference"; }
    std::string description() const override { return "Options related to running inference via Comparator.run()."; }
    std::vector<std::type_index> depends_on() const override;
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    bool add_to_script(Script& script) const override;

    /// Options for Comparator::run (`--warm-up`, `--save-inputs`).
    Comparator::RunOptions run_options() const;
    /// `--save-outputs`.
    const std::optional<std::string>& save_outputs_path() const { return save_outputs_path_; }

private:
    int warm_up_ = 0;
    std::optional<std::string> save_inputs_path_;
    std::optional<std::string> save_outputs_path_;
};

/// `--validate`, `--fail-fast`, `--compare/--compare-func {simple,indices}`, `--compare-func-script`
/// (refused), `--load-outputs/--load-results PATH...`, `--report`, `--model-explorer-node-data`. Generated scripts also
/// get the
/// `--postprocess` call (ComparatorPostprocessArgs, when the tool has it) after the loaded outputs.
class ComparatorCompareArgs : public ArgGroup {
public:
    std::string title() const override { return "Comparator Comparisons"; }
    std::string description() const override { return "Options related to inference output comparisons."; }
    std::vector<std::type_index> depends_on() const override;
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    bool add_to_script(Script& script) const override;

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
    /// The comparison function the options describe: compare_func::simple with CompareFuncSimpleArgs' options,
    /// or compare_func::indices with CompareFuncIndicesArgs' tolerances (`--compare indices`).
    CompareFunc compare_func() const;

private:
    // CompareFuncSimpleArgs' options, with --fail-fast and the histograms an HTML report needs.
    SimpleCompareOptions simple_compare_options() const;

    bool validate_ = false;
    bool fail_fast_ = false;
    std::string compare_func_ = "simple";
    std::vector<std::string> load_outputs_paths_;
    std::optional<std::string> report_path_;
    std::optional<std::string> model_explorer_path_;
};

}  // namespace polygraphy::tools
