#include "args/runner.h"

#include "args/loader.h"
#include "backend/loader.h"

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

polygraphy::RunnerStep IdentityOnlyRunnerArgs::runner_step() const {
    // required_group<>() finds a sibling group of `polygraphy run` by type. The step keeps copies of
    // the settings, not pointers to the groups.
    const bool rename_nodes = required_group<ReplaceReshapeArgs>().rename_nodes();
    const Speed speed = speed_;
    polygraphy::CustomRunnerStep step;
    // `model` loads the job's model (with `--onnx-outputs` and the other loading options applied)
    // and hands this runner a copy of its own, which ReplaceReshapes may change.
    step.build = [rename_nodes, speed](const polygraphy::OnnxLoader& model) -> std::unique_ptr<polygraphy::BaseRunner> {
        return std::make_unique<IdentityOnlyRunner>(ReplaceReshapes(model, rename_nodes), speed);
    };
    // No step.print: `--gen-script` refuses `--res-des` (a generated program could not include this
    // module's headers). A step that sets it writes its runner as C++ into the program.
    return step;
}

}  // namespace polygraphy_reshape_destroyer
