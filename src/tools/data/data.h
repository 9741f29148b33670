// `polygraphy data`: manipulate input and output data files.
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Dispatches to the "Data Manipulation Subtools" below.
std::unique_ptr<Tool> make_data_tool();

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

/// `data convert [--load-inputs P] [--load-outputs P [--runner NAME]] [--save-inputs F]
/// [--save-outputs F] [--save-test-data DIR]`: moves inputs and results between Polygraphy's JSON
/// and ONNX test-data folders (test_data.h). Every path is read by the readers `run` uses
/// (job/saved_data.h), so a format they learn (`.npz`) is converted too.
class DataConvertTool : public Tool {
public:
    DataConvertTool() : Tool("convert") {}
    std::string description() const override;

protected:
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `data merge PARTS... -o merged.json [--report FILE]`: load_dataset_summary() of each part,
/// merge_dataset_summaries(), save_dataset_summary(); logs the merged dataset summary. Exit status 0
/// when every sample passed, 1 when one failed (as `run`).
class DataMergeTool : public Tool {
public:
    DataMergeTool() : Tool("merge") {}
    std::string description() const override;

protected:
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
