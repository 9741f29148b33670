// The model argument (Polygraphy's ModelArgs).
#pragma once

#include <optional>
#include <string>

#include "polygraphy/common/tensor_metadata.h"
#include "polygraphy/tools/args/arg_group.h"

namespace polygraphy::tools {

/// Positional `model_file`, `--model-type`, `--input-shapes/--inputs name:[shape]...`.
/// The type comes from --model-type or the extension (.onnx; .engine/.plan, .py, .uff -> TensorRT;
/// .graphdef, .hdf5, a folder -> TensorFlow; .prototxt -> Caffe). Only ONNX can be used in this
/// build: other types fail while parsing ("TensorRT is not available in this build ...").
class ModelArgs : public ArgGroup {
public:
    /// Which model options the tool declares.
    struct Config {
        bool model_required = false;              ///< positional is required (else nargs='?')
        std::string input_shapes_opt = "inputs";  ///< "--<x>-shapes/--<x>s"; empty: no such option
    };
    ModelArgs() : ModelArgs(Config{}) {}
    /// Declares the options `config` names.
    explicit ModelArgs(Config config) : config_(std::move(config)) {}

    std::string title() const override { return "Model"; }
    std::string description() const override { return "Options related to the model"; }
    std::vector<OptionSpec> options() const override;
    void parse(const ParsedArgs& args) override;
    /// Adds nothing itself: the path reaches the job through OnnxLoadArgs, the shapes through DataLoaderArgs.
    bool add_to_job(RunJob& job) const override;

    /// Path as given (nullopt when no model was given).
    const std::optional<std::string>& path() const { return path_; }
    /// "onnx", or nullopt when no model was given.
    const std::optional<std::string>& model_type() const { return model_type_; }
    /// `--input-shapes` (shapes only; dtypes unknown).
    const TensorMetadata& input_shapes() const { return input_shapes_; }
    /// Flag spelling of the input-shapes option ("--input-shapes").
    std::string input_shapes_flag() const;

private:
    Config config_;
    std::optional<std::string> path_;
    std::optional<std::string> model_type_;
    TensorMetadata input_shapes_;
};

}  // namespace polygraphy::tools
