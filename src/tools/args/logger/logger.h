// Logging options of every tool (Polygraphy's LoggerArgs).
#pragma once

#include <optional>
#include <string>

#include "polygraphy/common/logger.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `-v/--verbose` (repeatable), `-q/--quiet` (repeatable), `--verbosity LEVEL [path:LEVEL ...]`,
/// `--silent`, `--log-format {timestamp,line-info,no-colors}...`, `--log-file PATH`.
/// parse() applies the settings to the global logger at once. -v/-q counts override the default
/// level of --verbosity (as Polygraphy's code does); `path:LEVEL` entries become the logger's
/// per-path severities (Logger::set_path_severities). --silent leaves only `[!]` lines, in every file.
/// `--log-format timestamp` adds the time to each line, `line-info` the file and line that logged it.
class LoggerArgs : public ArgGroup {
public:
    std::string title() const override { return "Logging"; }
    std::string description() const override { return "Options related to logging and debug output"; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Sets the job's logging (what a printed program sets up).
    bool add_to_job(RunJob& job) const override;

    /// The severity the options set.
    Severity severity() const { return severity_; }
    /// `--log-file`.
    const std::optional<std::string>& log_file() const { return log_file_; }

    /// Severity for `verbose - quiet` (1 VERBOSE, 2 EXTRA_VERBOSE, 3 SUPER_VERBOSE, >=4 ULTRA_VERBOSE,
    /// -1 START, -2 FINISH, -3 WARNING, -4 ERROR, < -4 CRITICAL); nullopt for 0.
    static std::optional<Severity> severity_from_level(int level);

private:
    Severity severity_ = Severity::kInfo;
    std::optional<std::string> log_file_;
};

}  // namespace polygraphy::tools
