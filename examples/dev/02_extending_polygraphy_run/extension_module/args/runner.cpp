#include "args/runner.h"

#include "args/loader.h"

namespace polygraphy_reshape_destroyer {

using namespace polygraphy::tools;

std::vector<std::type_index> IdentityOnlyRunnerArgs::depends_on() const {
    return {std::type_index(typeid(ReplaceReshapeArgs))};
}

std::vector<OptionSpec> IdentityOnlyRunnerArgs::options() const {
    return {
        // Prefixed with `--res-des` too. `choices` makes the parser reject anything else with
        // "argument --res-des-speed: invalid choice: 'x' (choose from 'slow', 'medium', 'fast')".
        Option({"--res-des-speed"})
            .help("Speed to run inference. Defaults to fast")
            .choices({"slow", "medium", "fast"}),
    };
}

void IdentityOnlyRunnerArgs::parse(const ParsedArgs& args) {
    speed_ = speed_from_name(args.value("res_des_speed").value_or("fast"));
}

std::unique_ptr<polygraphy::BaseRunner> IdentityOnlyRunnerArgs::make_runner() {
    return std::make_unique<IdentityOnlyRunner>(required_group<ReplaceReshapeArgs>().loader(), speed_);
}

}  // namespace polygraphy_reshape_destroyer
