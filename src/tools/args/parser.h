// An argparse-compatible command-line parser driven by OptionSpec tables.
#pragma once

#include <string>
#include <vector>

#include "polygraphy/common/exception.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// An argparse-level error (unknown choice, missing value, bad int, ambiguous prefix, missing
/// required option). The message is argparse's, e.g. "argument --seed: invalid int value: 'x'";
/// tools print `usage: ...` and `<prog>: error: <message>` and exit with status 2.
class ArgumentError : public UsageError {
public:
    using UsageError::UsageError;
};

/// Outcome of ArgumentParser::parse_known_args().
struct ParseResult {
    ParsedArgs args;  ///< the recognised options
    /// Tokens that matched nothing, in order (Polygraphy reports them as `Unrecognized Options`).
    std::vector<std::string> unknown;
    /// `-h/--help` was reached (parsing stopped there; print format_help() and exit 0).
    bool help_requested = false;
};

/// Parses like Python's argparse.ArgumentParser.parse_known_args:
/// - `--flag value`, `--flag=value`, `-v -v`, `-vv`, `-ofile`;
/// - unambiguous prefixes of long flags (`--iter` for `--iterations`) when abbreviations are allowed;
///   a prefix matching several options is an error listing them;
/// - option values run until the next token that looks like an option; `-1`, `-0.5` are values;
///   `--` makes every later token positional;
/// - types and choices are checked as options are consumed; required options at the end.
/// `-h/--help` is always present. Declaring a flag twice is an InternalError.
class ArgumentParser {
public:
    /// `prog` starts the usage line ("polygraphy run"); `description` follows it in the help.
    explicit ArgumentParser(std::string prog, std::string description = {});

    /// Adds a help section (argparse argument group). An empty title adds to the default
    /// "options" section (the tool's own options, next to -h).
    void add_group(const std::string& title, const std::string& description, const std::vector<OptionSpec>& options);
    /// Whether unambiguous prefixes of long flags are accepted (default: yes).
    void set_allow_abbrev(bool allow) { allow_abbrev_ = allow; }

    /// Throws ArgumentError for argparse-level errors.
    ParseResult parse_known_args(const std::vector<std::string>& args) const;

    /// The program name given to the constructor.
    const std::string& prog() const { return prog_; }
    /// "usage: polygraphy run [-h] [-v] ... [model_file]\n", wrapped like argparse.
    std::string format_usage(int width = 0) const;
    /// Full help: usage, description, then each section with its options. `width` 0: $COLUMNS - 2, else 78.
    std::string format_help(int width = 0) const;
    /// `usage` + "<prog>: error: <message>\n" (what argparse prints to stderr).
    std::string format_error(const std::string& message) const;

private:
    struct Section {
        std::string title;
        std::string description;
        std::vector<std::size_t> options;  // indices into options_
    };
    struct Match;

    std::vector<Match> match_option(const std::string& token) const;
    std::string action_name(const OptionSpec& spec) const;

    std::string prog_;
    std::string description_;
    bool allow_abbrev_ = true;
    std::vector<OptionSpec> options_;
    std::vector<Section> sections_;
};

/// Terminal width argparse would use: $COLUMNS - 2, else 78.
int help_width();

/// One entry of a help section: `header` ("-h, --help", a sub-command name) indented by `indent`.
struct HelpRow {
    std::size_t indent = 2;  ///< spaces before the header (4 for the sub-commands of a choice list)
    std::string header;      ///< the option's invocation or the sub-command's name
    std::string help;        ///< its help text (whitespace collapsed when wrapped); may be empty
};

/// Column where help texts start for `rows` at `width` (argparse's HelpFormatter: two spaces after the
/// longest indented header, at most 24 and at most width - 20).
std::size_t help_position(const std::vector<HelpRow>& rows, int width);

/// `row` laid out as argparse does: the header, then its help from `position` (on the next line when
/// the header reaches it), wrapped at `width`. Every line ends with '\n'.
std::string format_help_row(const HelpRow& row, std::size_t position, int width);

}  // namespace polygraphy::tools
