// The `ReplaceReshapeArgs` argument group: the command-line options of the ReplaceReshapes loader.
//
// Argument groups implement polygraphy::tools::ArgGroup (polygraphy/tools/args/arg_group.h): a
// title and description (the section of `polygraphy run -h`), the options, and parse(), which reads
// and validates them. Groups may use any group that `polygraphy run` has (src/tools/run/run.cpp
// lists them); this one builds on OnnxLoadArgs, which loads the ONNX model for us.
#pragma once

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy_reshape_destroyer {

class ReplaceReshapeArgs : public polygraphy::tools::ArgGroup {
public:
    std::string title() const override { return "ONNX Reshape Replacement"; }
    std::string description() const override {
        return "Options related to replacing no-op Reshape nodes with Identity in ONNX models.";
    }
    /// Checked when the tool is set up: `polygraphy run` must have an OnnxLoadArgs group.
    std::vector<std::type_index> depends_on() const override;

    /// `--res-des-rename-nodes`. Every option starts with `--res-des` (REShape DEStroyer) so that
    /// it cannot collide with Polygraphy's options or other modules' (a collision would make
    /// Polygraphy refuse to load this module).
    std::vector<polygraphy::tools::OptionSpec> options() const override;
    void parse(const polygraphy::tools::ParsedArgs& args) override;

    /// Whether replaced nodes are renamed (parsed from `--res-des-rename-nodes`).
    bool rename_nodes() const { return rename_nodes_; }
    /// ReplaceReshapes over the ONNX loader chain that OnnxLoadArgs built from the command line, so
    /// options such as `--onnx-outputs` are respected.
    polygraphy::OnnxLoader loader() const;

private:
    bool rename_nodes_ = false;
};

}  // namespace polygraphy_reshape_destroyer
