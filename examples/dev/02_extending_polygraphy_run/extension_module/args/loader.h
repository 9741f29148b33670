// The `ReplaceReshapeArgs` argument group: the command-line options of the ReplaceReshapes loader.
//
// Argument groups implement polygraphy::tools::ArgGroup (polygraphy/tools/args/arg_group.h): a
// title and description (the section of `polygraphy run -h`), the options, and parse(), which reads
// and validates them. A group of `polygraphy run` describes its part of the job that `run` executes
// (polygraphy/job/run_job.h); this one only holds an option that our runner group reads.
#pragma once

#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy_reshape_destroyer {

class ReplaceReshapeArgs : public polygraphy::tools::ArgGroup {
public:
    std::string title() const override { return "ONNX Reshape Replacement"; }
    std::string description() const override {
        return "Options related to replacing no-op Reshape nodes with Identity in ONNX models.";
    }

    /// `--res-des-rename-nodes`. Every option starts with `--res-des` (REShape DEStroyer) so that
    /// it cannot collide with Polygraphy's options or other modules' (a collision would make
    /// Polygraphy refuse to load this module).
    std::vector<polygraphy::tools::OptionSpec> options() const override;
    void parse(const polygraphy::tools::ParsedArgs& args) override;

    /// Whether replaced nodes are renamed (parsed from `--res-des-rename-nodes`).
    bool rename_nodes() const { return rename_nodes_; }

private:
    bool rename_nodes_ = false;
};

}  // namespace polygraphy_reshape_destroyer
