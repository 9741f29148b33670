// Argument groups shared by the `debug` subtools (Polygraphy's iterative_debug_args.py):
// the check command and its verdict, artifact sorting, and the iteration loop.
#pragma once

#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "polygraphy/common/ordered_map.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// Pass/Fail Reporting: `--check/--check-inference CMD...` (the rest of the command line),
/// `--fail-code/--fail-returncode N...` | `--ignore-fail-code/--ignore-fail-returncode N...`,
/// `--fail-regex RE...`, `--show-output` | `--hide-fail-output`, and (beyond Polygraphy)
/// `--check-timeout SECONDS`.
///
/// Verdict of one check (Polygraphy's rules, with the child's returncode as Python reports it:
/// -N when signal N killed it):
/// - a timeout is always a failure;
/// - an ignored code (--ignore-fail-code) is a pass;
/// - with --fail-code: a failure iff the code is listed (and, with --fail-regex, the output matches);
/// - else with --fail-regex: a failure iff the output (stdout + stderr) matches one of them;
/// - else: a failure iff the code is not 0 (so a crash is a failure).
/// Without --check, the user is asked on stdin (`[p]ass or [f]ail?`).
class CheckCmdArgs : public ArgGroup {
public:
    /// `interactive_without_check`: without --check the user is asked (false: the tool has a check of
    /// its own then, as `debug precision` does).
    explicit CheckCmdArgs(bool interactive_without_check = true)
        : interactive_without_check_(interactive_without_check) {}
    std::string title() const override { return "Pass/Fail Reporting"; }
    std::string description() const override { return "Options related to reporting pass/fail status during iterative debugging."; }
    bool allows_abbreviation() const override { return false; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;

    /// The `--check` command; nullopt: ask interactively (or the tool's own check).
    const std::optional<std::vector<std::string>>& check() const { return check_; }

    /// Whether the outcome of a check counts as a pass (the rules above).
    bool is_success(const ProcessResult& result) const;
    /// Runs the check command (or asks the user) for the artifact at `iter_artifact_path` and
    /// logs what happened; returns whether the iteration passed. Throws PolygraphyException when
    /// the command cannot be started.
    bool run_check(const std::optional<std::string>& iter_artifact_path) const;

private:
    bool interactive_without_check_;
    std::optional<std::vector<std::string>> check_;
    std::optional<std::vector<int64_t>> fail_codes_;
    std::optional<std::vector<int64_t>> ignore_fail_codes_;
    std::vector<std::regex> fail_regexes_;
    bool has_fail_regex_ = false;
    bool show_output_ = false;
    bool hide_fail_output_ = false;
    std::optional<double> timeout_;
};

/// Artifact Sorting: `--artifacts PATH...` (files or folders moved after each iteration into
/// `<art-dir>/good` or `<art-dir>/bad`, renamed `<stem>_<date>_<time><suffix><ext>`),
/// `--art-dir/--artifacts-dir DIR` (default `polygraphy_artifacts`).
class ArtifactSortArgs : public ArgGroup {
public:
    /// `warn_without_artifacts`: warn when --artifacts is not given.
    explicit ArtifactSortArgs(bool warn_without_artifacts = true) : warn_without_artifacts_(warn_without_artifacts) {}
    std::string title() const override { return "Artifact Sorting"; }
    std::string description() const override {
        return "Options related to sorting artifacts into good/bad directories based on pass/fail status.";
    }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;

    /// `--artifacts`.
    const std::vector<std::string>& artifacts() const { return artifacts_; }
    /// `--art-dir`.
    const std::string& output_dir() const { return output_dir_; }
    /// Moves every artifact into good/ or bad/ with `suffix` ("_N3") in its name. A missing
    /// artifact or an existing destination is logged as an error and skipped; a move that fails
    /// throws PolygraphyException naming both paths.
    void sort_artifacts(bool success, const std::string& suffix) const;

private:
    bool warn_without_artifacts_;
    std::vector<std::string> artifacts_;
    std::string output_dir_ = "polygraphy_artifacts";
    std::string start_date_;
    std::string start_time_;
};

/// Iterative Debugging: `--iter-artifact/--intermediate-artifact PATH` (tools that write one per
/// iteration; refused when it exists already), `--no-remove-intermediate`,
/// `--iter-info/--iteration-info PATH` (JSON {"iteration": i} written before each check),
/// `--until {good,bad,N}` (repeat), `--load-debug-replay PATH` (iterations recorded there take the
/// recorded verdict instead of running the check), `--save-debug-replay PATH` (the verdicts so far,
/// rewritten after each iteration, plus `<stem>_skip_current<ext>` written before each check with
/// that iteration marked failed, to skip past a check that crashes the machine). Unlike Polygraphy,
/// no replay is saved unless asked for. Needs CheckCmdArgs and ArtifactSortArgs.
///
/// Replay JSON: {"_N0_outputs": {"success": false, "iteration_info": {"iteration": 0}}, ...}, keys
/// being "_N<iteration><suffix>"; Polygraphy's older [success, extra] entries are read too.
class IterativeDebugArgs : public ArgGroup {
public:
    /// Which iteration options the tool declares.
    struct Config {
        std::optional<std::string> iter_artifact_default;  ///< nullopt: no --iter-artifact option
        bool allow_until = false;                          ///< declare --until
    };
    /// Declares the options `config` names.
    explicit IterativeDebugArgs(Config config) : config_(std::move(config)) {}

    std::string title() const override { return "Iterative Debugging"; }
    std::string description() const override { return "Options related to iteratively debugging."; }
    std::vector<std::type_index> depends_on() const override;
    bool allows_abbreviation() const override { return false; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;

    /// `--iter-artifact` (or the tool's default).
    const std::optional<std::string>& iter_artifact_path() const { return iter_artifact_path_; }

    /// What make_artifact() asks of the loop.
    enum class Step { kCheck, kStop };
    /// The tool's part of each iteration.
    struct Callbacks {
        /// Writes the iteration's artifact; kStop ends the loop before checking.
        std::function<Step(std::size_t index)> make_artifact;
        /// Takes the verdict; false ends the loop. Unset with --until (which decides instead).
        std::function<bool(std::size_t index, bool success)> advance;
        /// Estimate of the iterations left (shown in the RUNNING line), when known.
        std::function<std::optional<std::size_t>()> remaining;
        /// Suffix of sorted artifact names after "_N<i>" (reduce: "_outputs", "_inputs").
        std::string suffix;
    };
    /// Outcome of the loop.
    struct Summary {
        std::size_t iterations = 0;  ///< iterations run
        std::size_t passed = 0;      ///< iterations whose check passed
    };
    /// The loop: `RUNNING | Iteration k`, artifact, iteration info, check, artifact sorting,
    /// `PASSED/FAILED | Iteration i | Duration ...`, advance; then `Finished N iteration(s) |
    /// Passed: p/N | Pass Rate: x%`. The intermediate artifact and iteration info are removed after
    /// each iteration unless --no-remove-intermediate.
    /// Verdicts recorded by earlier iterate() calls of this session are kept (and saved) too.
    Summary iterate(const Callbacks& callbacks);

private:
    Config config_;
    std::optional<std::string> iter_artifact_path_;
    bool remove_intermediate_ = true;
    std::optional<std::string> iteration_info_path_;
    // --until: "good", "bad", or the number of iterations.
    std::optional<std::string> until_mode_;
    std::size_t until_count_ = 0;
    std::optional<std::string> save_replay_path_;
    OrderedMap<bool> loaded_replay_;  // from --load-debug-replay
    OrderedMap<bool> replay_;         // verdicts of this session (loaded ones included)

    void save_replay(const std::string& path) const;
};

}  // namespace polygraphy::tools
