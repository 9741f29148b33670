#include "tools/args/comparator/data_loader.h"

#include <cmath>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/tools/python_hooks.h"
#include "tools/args/model.h"
#include "tools/args/util.h"

namespace polygraphy::tools {
namespace {

constexpr int64_t kMaxSeed = 4294967295LL;  // numpy's RandomState takes 32-bit seeds

std::optional<double> number_of(const ParsedArgs& args, const std::string& dest, const std::string& flag) {
    auto text = args.value(dest);
    if (!text) return std::nullopt;
    const auto value = args_util::parse_float(*text);
    if (!value || std::isnan(*value) || std::isinf(*value))
        throw UsageError("Invalid value for " + flag + ": " + python_repr(*text) + ". Expected a finite number");
    return value;
}

}  // namespace

std::vector<OptionSpec> DataLoaderArgs::options() const {
    return {
        Option({"--seed"}).metavar("SEED").help("Seed to use for random inputs").type(ValueType::kInt),
        Option({"--val-range"})
            .kind(OptionKind::kValues)
            .help("Range of values to generate in the data loader. To specify per-input ranges, use the format: "
                  "--val-range <input_name>:[min,max]. If no input name is provided, the range is used for any inputs "
                  "not explicitly specified. For example: --val-range [0,1] inp0:[2,50] inp1:[3.0,4.6]"),
        Option({"--int-min"})
            .help("[DEPRECATED: Use --val-range] Minimum integer value for random integer inputs")
            .type(ValueType::kInt),
        Option({"--int-max"})
            .help("[DEPRECATED: Use --val-range] Maximum integer value for random integer inputs")
            .type(ValueType::kInt),
        Option({"--float-min"})
            .help("[DEPRECATED: Use --val-range] Minimum float value for random float inputs")
            .type(ValueType::kFloat),
        Option({"--float-max"})
            .help("[DEPRECATED: Use --val-range] Maximum float value for random float inputs")
            .type(ValueType::kFloat),
        Option({"--iterations", "--iters"})
            .dest("iterations")
            .metavar("NUM")
            .help("Number of inference iterations for which the default data loader should supply data")
            .type(ValueType::kInt),
        Option({"--data-loader-backend-module"})
            .help("The module to use for generating input arrays. Currently supported options: numpy, torch (torch "
                  "needs the Python bindings and PyTorch; the values are the same)")
            .choices({"numpy", "torch"}),
        Option({"--load-inputs", "--load-input-data"})
            .dest("load_inputs_paths")
            .kind(OptionKind::kValues)
            .help("Path(s) to load inputs. The file(s) should be a JSON-ified List[Dict[str, numpy.ndarray]], i.e. a "
                  "list where each element is the feed_dict for a single iteration. When this option is used, all "
                  "other data loader arguments are ignored.")
            .exclusive_group("custom_data_loader"),
        Option({"--data-loader-script"})
            .help("Path to a Python script that defines a function that loads input data. The function should take no "
                  "arguments and return a generator or iterable that yields input data (Dict[str, np.ndarray] or "
                  "Dict[str, torch.Tensor]). When this option is used, all other data loader arguments are ignored. "
                  "By default, Polygraphy looks for a function called `load_data`. You can specify a custom function "
                  "name by separating it with a colon. For example: `my_custom_script.py:my_func`. Needs the Python "
                  "bindings")
            .exclusive_group("custom_data_loader"),
        Option({"--data-loader-func-name"})
            .help("[DEPRECATED - function name can be specified with --data-loader-script like so: "
                  "`my_custom_script.py:my_func`] When using a data loader script, this specifies the name of the "
                  "function that loads data. Defaults to `load_data`."),
    };
}

void DataLoaderArgs::parse(const ParsedArgs& args) {
    // Python is loaded only for these flags (polygraphy/tools/python_hooks.h).
    script_loader_ = {};
    if (const auto script = python_hooks::script_function_argument(args, "--data-loader-script",
                                                                   "--data-loader-func-name", "load_data"))
        script_loader_ =
            python_hooks::bridge("--data-loader-script").data_loader_from_script(script->path, script->function);
    if (args.value("data_loader_backend_module") == std::optional<std::string>("torch"))
        python_hooks::bridge("--data-loader-backend-module torch").require_module("torch");

    options_ = DataLoader::Options{};
    if (auto seed = args.value("seed")) {
        const auto value = args_util::parse_int(*seed);
        if (!value || *value < 0 || *value > kMaxSeed)
            throw UsageError("Invalid value for --seed: " + python_repr(*seed) + ". The seed must be between 0 and " +
                             std::to_string(kMaxSeed));
        options_.seed = *value;
    }
    if (auto iterations = args.value("iterations")) {
        const auto value = args_util::parse_int(*iterations);
        if (!value || *value < 1)
            throw UsageError("Invalid value for --iterations: " + python_repr(*iterations) +
                             ". The number of iterations must be at least 1");
        options_.iterations = *value;
    }
    if (options_.seed + options_.iterations - 1 > kMaxSeed)
        throw UsageError("--seed " + std::to_string(options_.seed) + " with --iterations " +
                         std::to_string(options_.iterations) + " needs seeds above " + std::to_string(kMaxSeed) +
                         " (iteration i uses seed + i)");

    if (args.has("val_range"))
        options_.val_range = args_util::parse_val_ranges("--val-range", args.values("val_range"));

    const auto int_min = number_of(args, "int_min", "--int-min"), int_max = number_of(args, "int_max", "--int-max");
    const auto float_min = number_of(args, "float_min", "--float-min");
    const auto float_max = number_of(args, "float_max", "--float-max");
    if (int_min || int_max) options_.int_range = ValRange{int_min.value_or(1.0), int_max.value_or(25.0)};
    if (float_min || float_max) options_.float_range = ValRange{float_min.value_or(-1.0), float_max.value_or(1.0)};
    if (options_.int_range || options_.float_range)
        logger().warning(
            "--int-min/--int-max and --float-min/--float-max is deprecated and will be removed in Polygraphy 0.50.0. "
            "Use --val-range, which allows you to specify per-input data ranges, instead.");
    const auto& int_range = options_.int_range;
    if (int_range && int_range->min > int_range->max)
        throw UsageError("--int-min (" + std::to_string(static_cast<int64_t>(int_range->min)) +
                         ") is greater than --int-max (" + std::to_string(static_cast<int64_t>(int_range->max)) + ")");
    if (options_.float_range && options_.float_range->min > options_.float_range->max)
        throw UsageError("--float-min is greater than --float-max");

    if (const auto* model = group<ModelArgs>()) options_.input_metadata = model->input_shapes();

    load_inputs_paths_ = args.values("load_inputs_paths");
    if (!load_inputs_paths_.empty() || script_loader_) {
        for (const char* dest : {"seed", "int_min", "int_max", "float_min", "float_max", "val_range", "iterations"}) {
            if (!args.has(dest)) continue;
            std::string flag = std::string("--") + dest;
            for (char& c : flag)
                if (c == '_') c = '-';
            logger().warning("Argument: '" + flag +
                             "' will be ignored since a custom data loader was provided.\nThis argument is only valid "
                             "when using the default data loader.");
        }
    }
}

DataLoaderJob DataLoaderArgs::data_loader_job() const {
    DataLoaderJob job{options_, load_inputs_paths_, script_loader_};
    if (const auto* model = group<ModelArgs>()) job.model_path = model->path();
    return job;
}

DataLoaderFn DataLoaderArgs::get_data_loader() const {
    return build_data_loader(data_loader_job());
}

bool DataLoaderArgs::add_to_job(RunJob& job) const {
    job.data_loader = data_loader_job();
    return true;
}

}  // namespace polygraphy::tools
