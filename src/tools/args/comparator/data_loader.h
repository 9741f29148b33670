// Data loader options (Polygraphy's DataLoaderArgs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "polygraphy/comparator/data_loader.h"
#include "polygraphy/job/run_job.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `--seed N`, `--val-range [name:][min,max]...`, `--int-min/--int-max/--float-min/--float-max`
/// (deprecated, with a warning; they set the range of integer/float inputs), `--iterations/--iters N`,
/// `--data-loader-backend-module {numpy,torch}` (torch: the same values; needs the Python bridge and
/// PyTorch), `--load-inputs/--load-input-data PATH...` or `--data-loader-script file.py[:func]`
/// (mutually exclusive; run through the Python bridge, polygraphy/tools/python_hooks.h; generator
/// options given alongside either are ignored with a warning, as in Polygraphy).
/// Uses ModelArgs' --input-shapes (when present) for generated data.
class DataLoaderArgs : public ArgGroup {
public:
    std::string title() const override { return "Data Loader"; }
    std::string description() const override {
        return "Options related to loading or generating input data for inference.";
    }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Sets the job's data loader (data_loader_job()).
    bool add_to_job(RunJob& job) const override;

    /// The data loader the options describe: the loaded feeds or the seeded random generator.
    DataLoaderJob data_loader_job() const;
    /// build_data_loader(data_loader_job()): input files are read now (PolygraphyException when unreadable).
    DataLoaderFn get_data_loader() const;
    /// True unless --load-inputs or --data-loader-script was given.
    bool is_using_random_data() const { return load_inputs_paths_.empty() && !script_loader_; }

    /// Settings of the random generator.
    const DataLoader::Options& generator_options() const { return options_; }
    /// `--load-inputs` files, in order.
    const std::vector<std::string>& load_inputs_paths() const { return load_inputs_paths_; }

private:
    DataLoader::Options options_;
    std::vector<std::string> load_inputs_paths_;
    DataLoaderFn script_loader_;  // --data-loader-script's loader, or empty
};

}  // namespace polygraphy::tools
