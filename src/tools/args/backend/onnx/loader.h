// ONNX loading, saving and shape-inference options (Polygraphy's args/backend/onnx/loader.py).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/job/run_job.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// `--shape-inference/--do-shape-inference` (or `--no-shape-inference` where inference is on by
/// default), `--force-fallback-shape-inference` where allowed, `--no-onnxruntime-shape-inference`
/// (accepted for compatibility). When on, OnnxLoadArgs' model gets an InferShapesStep.
class OnnxInferShapesArgs : public ArgGroup {
public:
    /// Which shape-inference options the tool declares and their defaults.
    struct Config {
        bool default_on = false;            ///< sanitize: inference unless --no-shape-inference
        bool allow_force_fallback = false;  ///< extract/sanitize: --force-fallback-shape-inference
    };
    OnnxInferShapesArgs() : OnnxInferShapesArgs(Config{}) {}
    /// Declares the options `config` names.
    explicit OnnxInferShapesArgs(Config config) : config_(config) {}

    std::string title() const override { return "ONNX Shape Inference"; }
    std::string description() const override { return "Options related to ONNX shape inference."; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Adds nothing itself: OnnxLoadArgs puts step() in the model's loader chain.
    bool add_to_job(RunJob& job) const override;
    /// Whether shape inference is on (--shape-inference, or the tool's default).
    bool do_shape_inference() const { return do_shape_inference_; }
    /// `--force-fallback-shape-inference`: the built-in runtime infers the shapes.
    bool force_fallback() const { return force_fallback_; }
    /// The step the options describe; nullopt when shape inference is off.
    std::optional<InferShapesStep> step() const;
    /// Runs shape inference on `model` as the options say (no-op when off).
    void infer_shapes(onnx::ModelProto& model) const;

private:
    Config config_;
    bool do_shape_inference_ = false;
    bool force_fallback_ = false;
};

/// `--save-onnx PATH` (run) / `-o/--output` (other tools), `--save-external-data [PATH]` (relative
/// to the model's folder; bare: "<model file>.data"), `--external-data-size-threshold N` (default
/// 1024 bytes), `--no-save-all-tensors-to-one-file` (accepted; data always goes to one file).
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
    /// Adds nothing itself: OnnxLoadArgs puts step() in the model's loader chain (`run --save-onnx`).
    bool add_to_job(RunJob& job) const override;

    /// Where to save the model, if anywhere.
    const std::optional<std::string>& path() const { return path_; }
    /// nullopt: weights stay in the model; "" : the default file name.
    const std::optional<std::string>& external_data_path() const { return external_data_path_; }
    /// `--external-data-size-threshold` in bytes.
    std::size_t external_data_size_threshold() const { return external_data_size_threshold_; }
    /// The step the options describe; nullopt without a path.
    std::optional<SaveOnnxStep> step() const;
    /// Saves to path() as step() says (save_model(): atomically, creating missing folders, with
    /// external data when asked). PolygraphyException when the model is over 2 GiB without external
    /// data.
    void save(const onnx::ModelProto& model) const;

private:
    Config config_;
    std::optional<std::string> path_;
    std::optional<std::string> external_data_path_;
    std::size_t external_data_size_threshold_ = 1024;
};

/// `--external-data-dir/--load-external-data/--ext DIR`, `--ignore-external-data`,
/// `--onnx-outputs NAME... | mark all`, `--onnx-exclude-outputs NAME...`, `--fp-to-fp16`.
/// Describes the model (model_job()): the file, then shape inference (when an OnnxInferShapesArgs
/// group asks) -> ModifyOutputs (when outputs are changed) -> convert_to_fp16 (--fp-to-fp16) -> save
/// (when an OnnxSaveArgs group has a path).
class OnnxLoadArgs : public ArgGroup {
public:
    /// Which loading options the tool declares.
    struct Config {
        /// Prefix of `--<prefix>outputs/--<prefix>exclude-outputs`: "" in sanitize; nullopt: no
        /// output options (extract, insert), as Polygraphy's outputs_opt_prefix=False.
        std::optional<std::string> outputs_opt_prefix = "onnx-";
        /// Whether the loader saves the model when an OnnxSaveArgs group has a path (`run
        /// --save-onnx`); tools that save their own result (surgeon, convert) set false.
        bool allow_saving = true;
    };
    OnnxLoadArgs() : OnnxLoadArgs(Config{}) {}
    /// Declares the options `config` names.
    explicit OnnxLoadArgs(Config config) : config_(std::move(config)) {}

    std::string title() const override { return "ONNX Model Loading"; }
    std::string description() const override { return "Options related to loading ONNX models."; }
    std::vector<std::type_index> depends_on() const override;
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Sets the job's model (model_job()) when a model was given.
    bool add_to_job(RunJob& job) const override;

    /// The command line's model and its loader steps. UsageError when no model was given.
    ModelJob model_job() const;
    /// build_model_loader(model_job()): the loader of the tools that work on one model.
    OnnxLoader onnx_loader() const;

    /// nullopt: keep the model's outputs; kMarkAll for `mark all`; else the names.
    const std::optional<std::vector<std::string>>& outputs() const { return outputs_; }
    /// `--onnx-exclude-outputs`, `--external-data-dir`, `--ignore-external-data`.
    /// @{
    const std::vector<std::string>& exclude_outputs() const { return exclude_outputs_; }
    const std::optional<std::string>& external_data_dir() const { return external_data_dir_; }
    bool ignore_external_data() const { return ignore_external_data_; }
    /// @}
    /// `--fp-to-fp16` / `--fp-to-bf16` with the block lists; nullopt: no conversion.
    const std::optional<Fp16Options>& fp_to_16_bits() const { return fp_to_16_bits_; }

private:
    Config config_;
    std::optional<Fp16Options> fp_to_16_bits_;
    std::optional<std::vector<std::string>> outputs_;
    std::vector<std::string> exclude_outputs_;
    std::optional<std::string> external_data_dir_;
    bool ignore_external_data_ = false;
};

}  // namespace polygraphy::tools
