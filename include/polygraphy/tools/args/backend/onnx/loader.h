// ONNX loading, saving and shape-inference options (Polygraphy's args/backend/onnx/loader.py).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `--shape-inference/--do-shape-inference`, `--no-onnxruntime-shape-inference`. Accepted for
/// compatibility; this build has no separate ONNX shape inference pass (the runtime infers shapes
/// while running), so asking for it logs a warning.
class OnnxInferShapesArgs : public ArgGroup {
public:
    std::string title() const override { return "ONNX Shape Inference"; }
    std::string description() const override { return "Options related to ONNX shape inference."; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    bool add_to_script(Script& script) const override;
    /// Whether --shape-inference was given.
    bool do_shape_inference() const { return do_shape_inference_; }

private:
    bool do_shape_inference_ = false;
};

/// `--save-onnx PATH` (run) / `-o/--output` (other tools), `--save-external-data [PATH]`,
/// `--external-data-size-threshold N`, `--no-save-all-tensors-to-one-file`. External-data saving is
/// not implemented yet and is refused.
class OnnxSaveArgs : public ArgGroup {
public:
    /// Which saving options the tool declares.
    struct Config {
        std::string output_opt = "output";    ///< long flag without dashes; empty: none
        std::string output_short_opt = "-o";  ///< empty: none
        bool output_required = false;  ///< the output option is required
    };
    OnnxSaveArgs() : OnnxSaveArgs(Config{}) {}
    /// Declares the options `config` names.
    explicit OnnxSaveArgs(Config config) : config_(std::move(config)) {}

    std::string title() const override { return "ONNX Model Saving"; }
    std::string description() const override { return "Options related to saving ONNX models."; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    bool add_to_script(Script& script) const override;

    /// Where to save the model, if anywhere.
    const std::optional<std::string>& path() const { return path_; }

private:
    Config config_;
    std::optional<std::string> path_;
};

/// `--external-data-dir/--load-external-data/--ext DIR`, `--ignore-external-data`,
/// `--onnx-outputs NAME... | mark all`, `--onnx-exclude-outputs NAME...`, `--fp-to-fp16` (refused).
/// Builds the loader chain OnnxFromPath -> ModifyOutputs (when outputs are changed) -> SaveOnnx
/// (when an OnnxSaveArgs group has a path).
class OnnxLoadArgs : public ArgGroup {
public:
    std::string title() const override { return "ONNX Model Loading"; }
    std::string description() const override { return "Options related to loading ONNX models."; }
    std::vector<std::type_index> depends_on() const override;
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    bool add_to_script(Script& script) const override;
    /// Adds the loader chain of onnx_loader() to `script` (once) and returns its variable name.
    std::string add_onnx_loader(Script& script) const;

    /// The loader for the command line's model. UsageError when no model was given.
    OnnxLoader onnx_loader() const;

    /// The model's path when the command line loads it unchanged and it is self-contained (no
    /// external data), so that a runtime that reads ONNX files itself may take the file as is
    /// instead of a re-serialised copy (Polygraphy's ORT runner does the same). Else nullopt.
    std::optional<std::string> unmodified_model_path() const;

    /// nullopt: keep the model's outputs; kMarkAll for `mark all`; else the names.
    const std::optional<std::vector<std::string>>& outputs() const { return outputs_; }
    /// `--onnx-exclude-outputs`, `--external-data-dir`, `--ignore-external-data`.
    /// @{
    const std::vector<std::string>& exclude_outputs() const { return exclude_outputs_; }
    const std::optional<std::string>& external_data_dir() const { return external_data_dir_; }
    bool ignore_external_data() const { return ignore_external_data_; }
    /// @}

private:
    std::optional<std::vector<std::string>> outputs_;
    std::vector<std::string> exclude_outputs_;
    std::optional<std::string> external_data_dir_;
    bool ignore_external_data_ = false;
};

}  // namespace polygraphy::tools
