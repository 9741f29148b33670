// `polygraphy data convert`.
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// `data convert [--load-inputs P] [--load-outputs P [--runner NAME]] [--save-inputs F]
/// [--save-outputs F] [--save-test-data DIR]`: moves inputs and results between Polygraphy's JSON
/// and ONNX test-data folders (test_data.h). Every path is read and written by the same functions
/// as `run`'s options of the same names, so a format those learn (`.npz`) is converted too.
class DataConvertTool : public Tool {
public:
    DataConvertTool() : Tool("convert") {}
    std::string description() const override;

protected:
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
