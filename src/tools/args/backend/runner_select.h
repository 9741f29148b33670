// Runner selection for `polygraphy run` (Polygraphy's RunnerSelectArgs).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// Declares one selection flag per RunnerArgGroup of the tool ("Run inference using <name>.") and
/// records the selected runners in command-line order, repetitions included (`--ref --ref` = two
/// runners). Selecting a runner whose group reports unavailable_reason() fails while parsing.
class RunnerSelectArgs : public ArgGroup {
public:
    std::string title() const override { return "Runners"; }
    std::string description() const override { return "Options related to selecting runners to use for inference."; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Adds the selected runners to the job in command-line order (each group's runner_step() once
    /// per selection).
    bool add_to_job(RunJob& job) const override;

    /// Selected runner groups, one entry per occurrence, in command-line order.
    const std::vector<RunnerArgGroup*>& selected() const { return selected_; }

    /// ParsedArgs key of a runner's selection flag.
    static std::string dest_for(const RunnerArgGroup& group);

private:
    std::vector<RunnerArgGroup*> runner_groups() const;
    std::vector<RunnerArgGroup*> selected_;
};

}  // namespace polygraphy::tools
