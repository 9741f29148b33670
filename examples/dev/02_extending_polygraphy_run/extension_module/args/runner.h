// The `IdentityOnlyRunnerArgs` argument group: selects and configures the IdentityOnlyRunner.
//
// Runner groups implement polygraphy::tools::RunnerArgGroup: besides the ArgGroup interface they
// name the runner and the flag that selects it (`--res-des`, listed under "Runners" in
// `polygraphy run -h`), and describe the runner as a step of the job `polygraphy run` executes, once
// for each time that flag is given.
#pragma once

#include "backend/runner.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy_reshape_destroyer {

class IdentityOnlyRunnerArgs : public polygraphy::tools::RunnerArgGroup {
public:
    std::string title() const override { return "Identity-Only Runner Inference"; }
    std::string description() const override {
        return "Options related to running inference with the identity-only runner.";
    }
    /// Groups may depend on other groups (checked when the tool is set up): ours reads ReplaceReshapeArgs.
    std::vector<std::type_index> depends_on() const override;

    /// `--res-des-speed {slow,medium,fast}`; a value outside the choices is a usage error.
    std::vector<polygraphy::tools::OptionSpec> options() const override;
    void parse(const polygraphy::tools::ParsedArgs& args) override;

    std::string runner_display_name() const override { return "the Identity-Only Runner"; }
    std::string runner_flag() const override { return "--res-des"; }
    std::string runner_extra_help() const override {
        return "Replaces no-op Reshape nodes with Identity first (see --res-des-rename-nodes)";
    }
    /// A CustomRunnerStep building IdentityOnlyRunner(ReplaceReshapes(<the job's model>), speed).
    polygraphy::RunnerStep runner_step() const override;

    Speed speed() const { return speed_; }

private:
    Speed speed_ = Speed::kFast;
};

}  // namespace polygraphy_reshape_destroyer
