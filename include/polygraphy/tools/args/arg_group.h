// Argument groups: each owns its command-line options, parses and validates them, and builds the
// library objects they configure. Tools are made of groups; extension modules add groups the same way.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include "polygraphy/common/exception.h"
#include "polygraphy/job/run_job.h"

namespace polygraphy::tools {

/// How an option consumes command-line tokens (argparse's action/nargs).
enum class OptionKind {
    kFlag,           ///< store_true: `--validate`
    kCount,          ///< count: `-v -v` (or `-vv`)
    kValue,          ///< exactly one value: `--seed 1`, `--seed=1`
    kOptionalValue,  ///< nargs='?': `--save-external-data [PATH]` (the option's const_value when bare)
    kValues,         ///< nargs='+': `--atol 1e-4 out0:1e-2`, at least one value
    kAnyValues,      ///< nargs='*'
    kRemainder,      ///< argparse.REMAINDER: everything after it (`--check CMD ...`)
};

/// argparse's `type=`: values are checked when they are consumed; a bad one is a usage error
/// (`argument --seed: invalid int value: 'x'`, exit status 2).
enum class ValueType { kString, kInt, kFloat };

/// One option, declared as data (flags, help, metavar, choices), like LLVM's option tables.
///
/// Values are kept as the strings that were given (after the type check); groups convert them.
/// Values are taken from the following tokens until one looks like an option (`-x`, `--x`);
/// negative numbers (`-1`, `-.5`) are values. Options sharing a non-empty `exclusive_group` are
/// mutually exclusive (argparse's add_mutually_exclusive_group).
struct OptionSpec {
    std::vector<std::string> flags;  ///< first is canonical: {"--atol", "--abs-tol"}; positional: {"model_file"}
    std::string dest;                ///< key in ParsedArgs; derived from the first long flag when empty
    OptionKind kind = OptionKind::kValue;  ///< how the option consumes tokens
    std::string help;                      ///< help text
    std::string metavar;                     ///< help/usage placeholder; dest upper-cased (or {choices}) when empty
    std::vector<std::string> choices;        ///< allowed values (usage error listing them otherwise)
    std::optional<std::string> const_value;  ///< for kOptionalValue given without a value
    bool required = false;                ///< missing -> usage error
    bool positional = false;              ///< a positional argument (flags holds its name)
    ValueType type = ValueType::kString;  ///< type check of the values
    std::string exclusive_group;          ///< options sharing it are mutually exclusive
};

/// Fluent construction of an OptionSpec:
///     Option({"--seed"}).metavar("SEED").type(ValueType::kInt).help("Seed to use for random inputs")
class Option {
public:
    /// An option with these flags (the first is canonical); the setters below fill the other fields.
    explicit Option(std::vector<std::string> flags) { spec_.flags = std::move(flags); }
    /// Sets the OptionSpec field of the same name; returns *this.
    /// @{
    Option& dest(std::string value) {
        spec_.dest = std::move(value);
        return *this;
    }
    Option& kind(OptionKind value) {
        spec_.kind = value;
        return *this;
    }
    Option& help(std::string value) {
        spec_.help = std::move(value);
        return *this;
    }
    Option& metavar(std::string value) {
        spec_.metavar = std::move(value);
        return *this;
    }
    Option& choices(std::vector<std::string> value) {
        spec_.choices = std::move(value);
        return *this;
    }
    Option& const_value(std::string value) {
        spec_.const_value = std::move(value);
        return *this;
    }
    Option& required(bool value = true) {
        spec_.required = value;
        return *this;
    }
    Option& positional(bool value = true) {
        spec_.positional = value;
        return *this;
    }
    Option& type(ValueType value) {
        spec_.type = value;
        return *this;
    }
    Option& exclusive_group(std::string value) {
        spec_.exclusive_group = std::move(value);
        return *this;
    }
    /// @}
    /// The spec built so far.
    /// @{
    operator OptionSpec() const { return spec_; }  // NOLINT: implicit by design, for option tables
    const OptionSpec& spec() const { return spec_; }
    /// @}

private:
    OptionSpec spec_;
};

/// The ParsedArgs key of `spec`: `dest`, else the first `--long` flag (else the first flag) without
/// leading dashes and with '-' turned into '_' (argparse's rule).
std::string option_dest(const OptionSpec& spec);

/// Parsed command line: values by dest, in the order they appeared.
class ParsedArgs {
public:
    /// One appearance of an option on the command line.
    struct Occurrence {
        std::size_t position;             ///< index in argv (keeps `--ref --onnxrt` order)
        std::vector<std::string> values;  ///< empty for flags
        std::string flag;                 ///< the option string as matched (`--abs-tol`), the dest for positionals
    };

    /// Whether the option appeared at all.
    bool has(const std::string& dest) const;
    /// Number of times a kCount/kFlag option appeared.
    int count(const std::string& dest) const;
    /// Whether a flag appeared.
    bool flag(const std::string& dest) const { return count(dest) > 0; }
    /// Last value given for a single-value option.
    std::optional<std::string> value(const std::string& dest) const;
    /// Values of the last occurrence (argparse semantics for nargs='+').
    std::vector<std::string> values(const std::string& dest) const;
    /// Every occurrence in argv order (empty when the option was not given).
    const std::vector<Occurrence>& occurrences(const std::string& dest) const;

    /// Records an occurrence (the parser does this).
    void add(const std::string& dest, Occurrence occurrence);

    /// The tokens that were given (for `RUNNING | Command: ...`).
    std::vector<std::string> argv;

private:
    std::map<std::string, std::vector<Occurrence>> values_;
};

class ArgGroups;

/// Base of every argument group. A tool creates its groups (logger group first), hands each the
/// tool's ArgGroups (set_groups), then asks every group for options() — so a group may declare
/// options that depend on which other groups are present — and, after the command line is parsed,
/// calls parse() on each group in subscription order. parse() validates and stores typed values
/// and throws PolygraphyException (usually UsageError or UnsupportedError) with a one-line message
/// naming the option; the tool prints it as `[!] <message>` and exits with status 1, as Polygraphy
/// does for errors found after argparse. Groups find each other by type through ArgGroups;
/// depends_on() lists the types that must be present (checked when the tool is set up).
class ArgGroup {
public:
    virtual ~ArgGroup() = default;

    /// Help section heading, e.g. "Comparator Inference".
    virtual std::string title() const = 0;
    /// One line shown under the heading, e.g. "Options related to running inference via Comparator.run()".
    virtual std::string description() const = 0;
    /// Group types that must be subscribed too (checked by Tool::setup()).
    virtual std::vector<std::type_index> depends_on() const { return {}; }
    /// Whether unambiguous prefixes of this group's long flags are accepted (argparse allow_abbrev);
    /// a group with a kRemainder option should return false. One false disables it for the tool.
    virtual bool allows_abbreviation() const { return true; }

    /// Declares this group's options. Called after set_groups().
    virtual std::vector<OptionSpec> options() const = 0;
    /// Reads this group's values from `args`; throws PolygraphyException when invalid.
    virtual void parse(const ParsedArgs& args) = 0;

    /// Fills this group's part of the job that `polygraphy run` executes, or prints with
    /// `--gen-script` (polygraphy/job/run_job.h), after parse(). This is all a group of `run` does:
    /// run_job() and job_program() do the work. Returns false when the group has no part in a job
    /// (the default): running is unaffected (its options may still feed other groups), but
    /// `--gen-script` is refused when any of its options was given. Runner groups are added by the
    /// runner-selection group (runner_step(), once per selection); groups whose options only feed
    /// other groups (e.g. the model path) add nothing and return true.
    virtual bool add_to_job(RunJob& /*job*/) const { return false; }

    /// Called by ArgGroups::add().
    void set_groups(ArgGroups* groups) { groups_ = groups; }
    /// All groups of the tool (nullptr before set_groups()). Public so that code wiring a group
    /// into a tool can reach its siblings, e.g. `g->arg_groups()->get<OnnxLoadArgs>()`.
    const ArgGroups* arg_groups() const { return groups_; }

protected:
    /// The group of type G in the same tool, or nullptr.
    template <typename G>
    G* group() const;
    /// The group of type G in the same tool; InternalError naming both groups when absent.
    template <typename G>
    G& required_group() const;

private:
    ArgGroups* groups_ = nullptr;
};

/// The groups of one tool, in subscription order (logger group first).
class ArgGroups {
public:
    /// Adds `group` (and gives it access to its siblings); returns it.
    ArgGroup& add(std::unique_ptr<ArgGroup> group) {
        group->set_groups(this);
        groups_.push_back(std::move(group));
        return *groups_.back();
    }
    /// The first group of type G (or derived from it), or nullptr.
    template <typename G>
    G* get() const {
        for (const auto& group : groups_)
            if (auto* typed = dynamic_cast<G*>(group.get())) return typed;
        return nullptr;
    }
    /// Every group, in subscription order.
    const std::vector<std::unique_ptr<ArgGroup>>& all() const { return groups_; }

private:
    std::vector<std::unique_ptr<ArgGroup>> groups_;
};

template <typename G>
G* ArgGroup::group() const {
    return groups_ ? groups_->get<G>() : nullptr;
}

template <typename G>
G& ArgGroup::required_group() const {
    G* found = group<G>();
    if (!found)
        throw InternalError("argument group '" + title() + "' needs a group of type " + typeid(G).name() +
                            " that its tool does not subscribe to");
    return *found;
}

/// A group that contributes a runner to `polygraphy run`. The runner-selection group asks every
/// RunnerArgGroup for its selection flag (`--ref`, `--onnxrt`, `--res-des`...) so adding a backend
/// never touches the selector. Runners are created in the order their flags appear, one per
/// occurrence (`--ref --ref` makes two runners).
class RunnerArgGroup : public ArgGroup {
public:
    /// Display name ("ONNX-Runtime") and selection flag ("--onnxrt").
    /// @{
    virtual std::string runner_display_name() const = 0;
    virtual std::string runner_flag() const = 0;
    /// @}
    /// Appended to the selection flag's help ("Run inference using <name>. <extra>").
    virtual std::string runner_extra_help() const { return {}; }
    /// Set for backends this build cannot run (TensorRT, TensorFlow): selecting the runner then
    /// fails while parsing with this message, e.g. "TensorRT is not available in this build".
    virtual std::optional<std::string> unavailable_reason() const { return std::nullopt; }
    /// The runner the parsed options describe, as a step of the job: a built-in runner's settings, or
    /// for an extension module a CustomRunnerStep (what it builds over the job's model, and how
    /// `--gen-script` prints it). Called once per occurrence of the flag, after every group was parsed.
    virtual RunnerStep runner_step() const = 0;
};

}  // namespace polygraphy::tools
