// `polygraphy debug`: iterate, sort artifacts into good/bad, reduce failing models.
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Dispatcher of the debug subtools (`diff`, `precision`, `reduce`, `repeat`); `build` needs TensorRT
/// and is not part of this build.
std::unique_ptr<Tool> make_debug_tool();

/// `debug repeat --until {good,bad,N} [--artifacts ...] --check CMD...`: runs the check command
/// repeatedly, sorting the artifacts of each run into good/ or bad/, and reports the pass rate.
/// Exits 0 whatever the verdicts (as Polygraphy's debug tools do).
class RepeatTool : public Tool {
public:
    RepeatTool() : Tool("repeat") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs& /*args*/) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    int run_impl(const ParsedArgs& args) override;
};

/// `debug reduce MODEL -o OUT [--min-good PATH] [--mode {bisect,linear}] --check CMD...`:
/// shrinks a failing ONNX model to a small subgraph that still fails (see reducer.h for the
/// search and reduce.cpp for how candidate models are built). Exits 1 when the original model
/// does not fail, since there is then nothing to reduce.
class ReduceTool : public Tool {
public:
    ReduceTool() : Tool("reduce") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs& /*args*/) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `debug diff A.onnx B.onnx`: pairs the tensors of two different graphs of one network and ranks
/// B's layers by their local error (polygraphy/job/diff_job.h). Exits 1 when B's graph outputs fail
/// the tolerances.
class DiffTool : public Tool {
public:
    DiffTool() : Tool("diff") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs& /*args*/) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `debug precision MODEL [--precision {fp16,bf16,int8}]`: the nodes to keep in higher precision so
/// that the low-precision model passes on every sample (polygraphy/job/precision_job.h). Exits 0 with
/// an answer, 1 when there is none (the model fails at full precision, or with every node kept).
class PrecisionTool : public Tool {
public:
    PrecisionTool() : Tool("precision") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs& /*args*/) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
