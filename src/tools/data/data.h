// `polygraphy data`: manipulate input and output data files.
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Dispatches to the "Data Manipulation Subtools" below.
class DataTool : public Tool {
public:
    DataTool() : Tool("data") {}
    std::string description() const override;
    Subtools make_subtools() const override;

protected:
    int run_impl(const ParsedArgs& args) override;
};

/// `data to-input paths... -o out.json`: merge_into_inputs() saved as one `--load-inputs` file,
/// logging `Saving input file containing N iteration(s) to <path>`.
class DataToInputTool : public Tool {
public:
    DataToInputTool() : Tool("to-input") {}
    std::string description() const override;

protected:
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
