#include "tools/args/backend/ref/runner.h"

#include "polygraphy/common/exception.h"
#include "tools/args/backend/onnx/loader.h"
#include "tools/args/model.h"
#include "tools/args/util.h"

namespace polygraphy::tools {

std::vector<std::type_index> RefRunnerArgs::depends_on() const {
    return {std::type_index(typeid(ModelArgs)), std::type_index(typeid(OnnxLoadArgs))};
}

std::vector<OptionSpec> RefRunnerArgs::options() const {
    return {
        Option({"--ref-threads"})
            .metavar("N")
            .help("Number of threads the reference runtime uses. Defaults to 0: at each run, the cores that other "
                  "processes leave idle (at least 1). Give a number for bit-identical reruns")
            .type(ValueType::kInt),
        Option({"--ref-no-fusion"})
            .kind(OptionKind::kFlag)
            .help("Run every node as written. By default, a Relu, Clip, SiLU or GELU that is the only reader of a "
                  "Conv's (or a float MatMul's or Gemm's) output is folded into that node, and so are a Linear layer's "
                  "bias Add into its MatMul and a residual Add into the Conv before it, which is faster; a folded Relu "
                  "or Clip turns NaN into 0 (or the lower "
                  "bound), as ONNX Runtime's fused kernels do. Outputs marked with --onnx-outputs are never folded "
                  "away"),
        Option({"--ref-precision"})
            .choices({"float32", "float64"})
            .help("float64: compute a copy of the model converted to float64 (weights, activations and Casts; "
                  "quantization ops stay in float32), a reference truer than any float32 backend: compare a backend "
                  "with it to see its distance to the noise floor. Default: float32, the model as written"),
        Option({"--ref-profile"})
            .kind(OptionKind::kFlag)
            .help("Time every node and print where the time went when the runner finishes: milliseconds per run by "
                  "op type and for the slowest nodes (the first run, which prepares the kernels, is not counted)"),
    };
}

void RefRunnerArgs::parse(const ParsedArgs& args) {
    threads_ = 0;
    if (auto text = args.value("ref_threads")) {
        const auto value = args_util::parse_int(*text);
        if (!value || *value < 0 || *value > 4096)
            throw UsageError("Invalid value for --ref-threads: " + python_repr(*text) +
                             ". Expected a number of threads between 0 (the cores available) and 4096");
        threads_ = static_cast<int>(*value);
    }
    fuse_activations_ = !args.flag("ref_no_fusion");
    profile_ = args.flag("ref_profile");
    float64_ = args.value("ref_precision").value_or("float32") == "float64";
}

RunnerStep RefRunnerArgs::runner_step() const {
    ref::SessionOptions options;
    options.num_threads = threads_;
    options.fuse_activations = fuse_activations_;
    options.profile = profile_;
    return RefRunnerStep{options, float64_ ? DataType::kFloat64 : DataType::kFloat32};
}

bool RefRunnerArgs::add_to_job(RunJob& /*job*/) const {
    return true;
}

std::vector<std::type_index> PluginRefRunnerArgs::depends_on() const {
    return {std::type_index(typeid(RefRunnerArgs))};
}

RunnerStep PluginRefRunnerArgs::runner_step() const {
    return arg_groups()->get<RefRunnerArgs>()->runner_step();
}

}  // namespace polygraphy::tools
