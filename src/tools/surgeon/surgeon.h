// `polygraphy surgeon`: extract, sanitize and insert (graph.h does the work); prune, weight-strip
// and weight-reconstruct, which rewrite a model's weights (sparsity.h and weight_strip.h do the work).
#pragma once

#include "polygraphy/tools/tool.h"

namespace polygraphy::tools {

/// Dispatches to the "Surgical Instruments" below.
std::unique_ptr<Tool> make_surgeon_tool();

/// `surgeon extract M.onnx --inputs name:shape:dtype ... --outputs name:dtype ... -o sub.onnx`
/// (`auto` for any shape or dtype; omitted lists mean the model's current inputs/outputs).
class SurgeonExtractTool : public Tool {
public:
    SurgeonExtractTool() : Tool("extract") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs&) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `surgeon sanitize M.onnx -o out.onnx`: --override-input-shapes (then shapes are re-inferred),
/// --cleanup, --toposort, --fold-constants (--num-passes, --no-fold-shapes,
/// --no-per-pass-shape-inference, --fold-size-threshold, --partitioning accepted), --outputs.
/// Order: load (+ shape inference unless --no-shape-inference) -> override shapes -> cleanup ->
/// toposort -> fold -> save.
class SurgeonSanitizeTool : public Tool {
public:
    SurgeonSanitizeTool() : Tool("sanitize") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs&) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `surgeon insert M.onnx --inputs t1 ... --outputs t2 ... --op OpType [--name n] [--attrs k=v ...]
/// -o out.onnx`: the subgraph between the tensors is replaced by one node (an output that is also
/// an input gets a new tensor `<name>_polygraphy_surgeon_insert_output`).
class SurgeonInsertTool : public Tool {
public:
    SurgeonInsertTool() : Tool("insert") {}
    std::string description() const override;

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `surgeon prune M.onnx -o out.onnx`: prune_model_2_4().
class SurgeonPruneTool : public Tool {
public:
    SurgeonPruneTool() : Tool("prune") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs&) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    int run_impl(const ParsedArgs& args) override;
};

/// `surgeon weight-strip M.onnx -o out.onnx [--exclude-list FILE]`: strip_weights(); the file
/// names one initializer per line (trailing whitespace ignored).
class SurgeonWeightStripTool : public Tool {
public:
    SurgeonWeightStripTool() : Tool("weight-strip") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs&) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    std::vector<OptionSpec> tool_options() const override;
    int run_impl(const ParsedArgs& args) override;
};

/// `surgeon weight-reconstruct M.onnx -o out.onnx`: reconstruct_weights().
class SurgeonWeightReconstructTool : public Tool {
public:
    SurgeonWeightReconstructTool() : Tool("weight-reconstruct") {}
    std::string description() const override;
    bool show_start_end_logging(const ParsedArgs&) const override { return true; }

protected:
    std::vector<std::unique_ptr<ArgGroup>> subscriptions() override;
    int run_impl(const ParsedArgs& args) override;
};

}  // namespace polygraphy::tools
