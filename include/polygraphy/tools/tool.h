// Tool: one `polygraphy <tool>` command, made of argument groups (Polygraphy's tools/base/tool.py).
#pragma once

#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

class Tool;
class ArgumentParser;

/// The subtools of a tool (`polygraphy inspect model`), as Polygraphy's get_subtools(): a help
/// section title ("Inspection Subtools") and the tools, in the order help lists them.
struct Subtools {
    std::string title;                         ///< help section title
    std::vector<std::unique_ptr<Tool>> tools;  ///< the subtools, in help order
};

/// A command-line tool. Subclasses list their argument groups (subscriptions(); the logger group
/// is always added first), may add options of their own (tool_options()), and implement run_impl().
///
/// Sequence (driven by cli_main): setup() -> parser().parse_known_args() -> parse() -> run().
class Tool {
public:
    /// `name` as typed after `polygraphy` ("run").
    explicit Tool(std::string name);
    virtual ~Tool();
    Tool(const Tool&) = delete;
    Tool& operator=(const Tool&) = delete;

    /// The tool's name.
    const std::string& name() const { return name_; }
    /// Help text; its first paragraph is the summary listed by `polygraphy -h`.
    virtual std::string description() const = 0;
    /// The first paragraph of description().
    std::string summary() const;

    /// Creates the groups and the parser for `prog` ("polygraphy run"). Throws InternalError when
    /// two groups declare the same flag or a group's depends_on() is not met. Idempotent.
    void setup(const std::string& prog);
    /// The parser built by setup() (InternalError before). Its class is internal to the library.
    const ArgumentParser& parser() const;
    /// The subscribed groups (empty before setup()).
    /// @{
    ArgGroups& groups() { return groups_; }
    const ArgGroups& groups() const { return groups_; }
    /// @}

    /// Parses every group in subscription order (so logging is configured first).
    void parse(const ParsedArgs& args);
    /// Whether `[I] RUNNING | Command: ...` and `PASSED/FAILED | Runtime: ...` lines frame the run.
    virtual bool show_start_end_logging(const ParsedArgs& /*args*/) const { return false; }
    /// Logs the loaded module (verbose) and runs the tool; returns the exit status.
    int run(const ParsedArgs& args);

    /// A tool with subtools only dispatches: cli_main takes the next token as the subtool's name
    /// (a usage error, status 2, when missing or unknown) and runs that subtool with the rest, its
    /// prog being "<prog> <subtool>". Such a tool's own groups and run_impl() are never used.
    virtual Subtools make_subtools() const { return {}; }

protected:
    /// The tool's argument groups, in the order they are parsed (the logger group is added before them).
    virtual std::vector<std::unique_ptr<ArgGroup>> subscriptions() { return {}; }
    /// Options of the tool itself (listed under "options", next to -h).
    virtual std::vector<OptionSpec> tool_options() const { return {}; }
    /// Does the tool's work after every group was parsed; returns the exit status. Throws
    /// PolygraphyException for errors (printed as `[!] ...`, exit status 1).
    virtual int run_impl(const ParsedArgs& args) = 0;

    /// The subscribed group of type G; InternalError when the tool did not subscribe to it.
    template <typename G>
    G& arg_group() const {
        G* found = groups_.get<G>();
        if (!found) throw InternalError("tool '" + name_ + "' has no argument group of type " + typeid(G).name());
        return *found;
    }

private:
    std::string name_;
    ArgGroups groups_;
    std::unique_ptr<ArgumentParser> parser_;  // built by setup()
};

/// A tool that only dispatches to its subtools (`polygraphy inspect`, `surgeon`, ...): its help
/// text, help section title and subtools are data, so each such tool is one constructor call.
class DispatchingTool : public Tool {
public:
    /// Makes one subtool; make_subtool<T> is one.
    using SubtoolFactory = std::unique_ptr<Tool> (*)();

    /// `subtools_title` heads the help section listing `subtools`, in this order.
    DispatchingTool(std::string name, std::string description, std::string subtools_title,
                    std::vector<SubtoolFactory> subtools);
    std::string description() const override { return description_; }
    Subtools make_subtools() const override;

protected:
    /// Never called (cli_main runs a subtool instead): throws InternalError.
    int run_impl(const ParsedArgs& args) override;

private:
    std::string description_;
    std::string subtools_title_;
    std::vector<SubtoolFactory> subtools_;
};

/// A DispatchingTool::SubtoolFactory for the default-constructible tool T.
template <typename T>
std::unique_ptr<Tool> make_subtool() {
    return std::make_unique<T>();
}

/// "Polygraphy | Version: 0.1.0 | Path: ['/usr/lib']" (the library's folder), as `polygraphy -v` prints it.
std::string version_info();

}  // namespace polygraphy::tools
