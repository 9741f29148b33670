// Argument groups: each owns its command-line options, parses and validates them, and builds the
// library objects they configure. Tools are made of groups; extension modules add groups the same way.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "polygraphy/backend/base/runner.h"

namespace polygraphy::tools {

/// How an option consumes command-line tokens (argparse's action/nargs).
enum class OptionKind {
    kFlag,           ///< store_true: `--validate`
    kCount,          ///< count: `-v -v`
    kValue,          ///< exactly one value: `--seed 1`
    kOptionalValue,  ///< nargs='?': `--save-external-data [PATH]` (the option's const_value when bare)
    kValues,         ///< nargs='+': `--atol 1e-4 out0:1e-2`, at least one value
    kAnyValues,      ///< nargs='*'
    kRemainder,      ///< argparse.REMAINDER: everything after it (`--check CMD ...`)
};

/// One option, declared as data (flags, help, metavar, choices), like LLVM's option tables.
struct OptionSpec {
    std::vector<std::string> flags;     ///< first is canonical: {"--atol", "--abs-tol"}; positional: {"model_file"}
    std::string dest;                   ///< key in ParsedArgs; derived from the first flag when empty
    OptionKind kind = OptionKind::kValue;
    std::string help;
    std::string metavar;
    std::vector<std::string> choices;   ///< allowed values (usage error listing them otherwise)
    std::optional<std::string> const_value;  ///< for kOptionalValue given without a value
    bool required = false;
    bool positional = false;
};

/// Parsed command line: values by dest, in the order they appeared.
class ParsedArgs {
public:
    struct Occurrence {
        std::size_t position;             ///< index in argv (keeps `--ref --onnxrt` order)
        std::vector<std::string> values;  ///< empty for flags
    };

    bool has(const std::string& dest) const;
    /// Number of times a kCount/kFlag option appeared.
    int count(const std::string& dest) const;
    bool flag(const std::string& dest) const { return count(dest) > 0; }
    /// Last value given for a single-value option.
    std::optional<std::string> value(const std::string& dest) const;
    /// Values of the last occurrence (argparse semantics for nargs='+').
    std::vector<std::string> values(const std::string& dest) const;
    /// Every occurrence in argv order.
    const std::vector<Occurrence>& occurrences(const std::string& dest) const;

    void add(const std::string& dest, Occurrence occurrence);

    /// The tokens that were given (for `RUNNING | Command: ...`).
    std::vector<std::string> argv;

private:
    std::map<std::string, std::vector<Occurrence>> values_;
};

class ArgGroups;

/// Base of every argument group. The tool calls, in this fixed order: register_group() (when the
/// group joins a tool), add_options() (declares flags under the group's title), parse() (validates
/// and stores typed values; throws UsageError with a one-line message). Groups find each other by
/// type through ArgGroups; depends_on() lists the types that must be present.
class ArgGroup {
public:
    virtual ~ArgGroup() = default;

    /// Help section heading, e.g. "Comparator Inference".
    virtual std::string title() const = 0;
    /// One line shown under the heading.
    virtual std::string description() const = 0;
    virtual std::vector<std::type_index> depends_on() const { return {}; }

    /// Declares this group's options.
    virtual std::vector<OptionSpec> options() const = 0;
    /// Reads this group's values from `args`; throws UsageError (or PolygraphyException) when invalid.
    virtual void parse(const ParsedArgs& args) = 0;

    void set_groups(ArgGroups* groups) { groups_ = groups; }

protected:
    /// The group of type G in the same tool, or nullptr.
    template <typename G>
    G* group() const;

private:
    ArgGroups* groups_ = nullptr;
};

/// The groups of one tool, in subscription order (logger group first).
class ArgGroups {
public:
    ArgGroup& add(std::unique_ptr<ArgGroup> group) {
        group->set_groups(this);
        groups_.push_back(std::move(group));
        return *groups_.back();
    }
    template <typename G>
    G* get() const {
        for (const auto& group : groups_)
            if (auto* typed = dynamic_cast<G*>(group.get())) return typed;
        return nullptr;
    }
    const std::vector<std::unique_ptr<ArgGroup>>& all() const { return groups_; }

private:
    std::vector<std::unique_ptr<ArgGroup>> groups_;
};

template <typename G>
G* ArgGroup::group() const {
    return groups_ ? groups_->get<G>() : nullptr;
}

/// A group that contributes a runner to `polygraphy run`. The runner-selection group asks every
/// RunnerArgGroup for its selection flag (`--ref`, `--onnxrt`, `--res-des`...) so adding a backend
/// never touches the selector. Runners are created in the order their flags appear.
class RunnerArgGroup : public ArgGroup {
public:
    /// Display name ("ONNX-Runtime") and selection flag ("--onnxrt").
    virtual std::string runner_display_name() const = 0;
    virtual std::string runner_flag() const = 0;
    /// Creates a new runner from the parsed options (called once per occurrence of the flag).
    virtual std::unique_ptr<BaseRunner> make_runner() = 0;
};

}  // namespace polygraphy::tools
