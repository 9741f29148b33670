#include "polygraphy/tools/args/comparator/data_loader.h"
#include "polygraphy/tools/script.h"

#include <cmath>
#include <memory>
#include <mutex>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/run_results.h"
#include "polygraphy/tools/args/model.h"
#include "polygraphy/tools/args/util.h"

namespace polygraphy::tools {
namespace {

constexpr int64_t kMaxSeed = 4294967295LL;  // numpy's RandomState takes 32-bit seeds

std::optional<double> number_of(const ParsedArgs& args, const std::string& dest, const std::string& flag) {
    auto text = args.value(dest);
    if (!text) return std::nullopt;
    const auto value = args_util::parse_float(*text);
    if (!value || std::isnan(*value) || std::isinf(*value))
        throw UsageError("Invalid value for " + flag + ": " + args_util::python_repr(*text) +
                         ". Expected a finite number");
    return value;
}

// A loader that applies the deprecated --int-min/--int-max/--float-min/--float-max ranges: they set
// the range of every integer / floating-point input (not bool), over --val-range (Polygraphy's
// DataLoader int_range/float_range). The per-input ranges need the model's input dtypes, which
// are known only when the Comparator calls the loader.
DataLoaderFn with_type_ranges(DataLoader::Options options, std::optional<ValRange> int_range,
                              std::optional<ValRange> float_range) {
    struct State {
        std::once_flag once;
        std::shared_ptr<DataLoaderFn> loader;
    };
    auto state = std::make_shared<State>();
    return [state, options = std::move(options), int_range, float_range](
               std::size_t iteration, const TensorMetadata& metadata) -> std::optional<TensorMap> {
        std::call_once(state->once, [&] {
            DataLoader::Options adjusted = options;
            for (const auto& [name, entry] : metadata) {
                if (!entry.dtype) continue;
                if (int_range && dtype_is_integer(*entry.dtype))
                    adjusted.val_range.set(name, *int_range);
                else if (float_range && dtype_is_floating(*entry.dtype))
                    adjusted.val_range.set(name, *float_range);
            }
            state->loader = std::make_shared<DataLoaderFn>(DataLoader(adjusted).as_function());
        });
        return (*state->loader)(iteration, metadata);
    };
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
            .help("The module to use for generating input arrays. Currently supported options: numpy, torch (torch is "
                  "not available in this build)")
            .choices({"numpy", "torch"}),
        Option({"--load-inputs", "--load-input-data"})
            .dest("load_inputs_paths")
            .kind(OptionKind::kValues)
            .help("Path(s) to load inputs. The file(s) should be a JSON-ified List[Dict[str, numpy.ndarray]], i.e. a "
                  "list where each element is the feed_dict for a single iteration. When this option is used, all "
                  "other data loader arguments are ignored.")
            .exclusive_group("custom_data_loader"),
        Option({"--data-loader-script"})
            .help("Path to a Python script that defines a function that loads input data. Not available in this build: "
                  "save the data with Polygraphy and use --load-inputs instead")
            .exclusive_group("custom_data_loader"),
        Option({"--data-loader-func-name"})
            .help("[DEPRECATED - function name can be specified with --data-loader-script like so: "
                  "`my_custom_script.py:my_func`] Not available in this build"),
    };
}

void DataLoaderArgs::parse(const ParsedArgs& args) {
    if (args.has("data_loader_script") || args.has("data_loader_func_name"))
        throw UnsupportedError(
            "--data-loader-script is not available in this build (it runs Python code). Save the inputs to a JSON "
            "file (for example with Polygraphy's --save-inputs) and use --load-inputs instead");
    if (args.value("data_loader_backend_module") == std::optional<std::string>("torch"))
        throw UnsupportedError(
            "--data-loader-backend-module torch is not available in this build (PyTorch is not "
            "available); use numpy");

    options_ = DataLoader::Options{};
    if (auto seed = args.value("seed")) {
        const auto value = args_util::parse_int(*seed);
        if (!value || *value < 0 || *value > kMaxSeed)
            throw UsageError("Invalid value for --seed: " + args_util::python_repr(*seed) +
                             ". The seed must be between 0 and " + std::to_string(kMaxSeed));
        options_.seed = *value;
    }
    if (auto iterations = args.value("iterations")) {
        const auto value = args_util::parse_int(*iterations);
        if (!value || *value < 1)
            throw UsageError("Invalid value for --iterations: " + args_util::python_repr(*iterations) +
                             ". The number of iterations must be at least 1");
        options_.iterations = *value;
    }
    if (options_.seed + options_.iterations - 1 > kMaxSeed)
        throw UsageError("--seed " + std::to_string(options_.seed) + " with --iterations " +
                         std::to_string(options_.iterations) + " needs seeds above " + std::to_string(kMaxSeed) +
                         " (iteration i uses seed + i)");

    if (args.has("val_range"))
        options_.val_range = args_util::parse_val_ranges("--val-range", args.values("val_range"));

    int_range_.reset();
    float_range_.reset();
    const auto int_min = number_of(args, "int_min", "--int-min"), int_max = number_of(args, "int_max", "--int-max");
    const auto float_min = number_of(args, "float_min", "--float-min");
    const auto float_max = number_of(args, "float_max", "--float-max");
    if (int_min || int_max) int_range_ = ValRange{int_min.value_or(1.0), int_max.value_or(25.0)};
    if (float_min || float_max) float_range_ = ValRange{float_min.value_or(-1.0), float_max.value_or(1.0)};
    if (int_range_ || float_range_)
        logger().warning(
            "--int-min/--int-max and --float-min/--float-max is deprecated and will be removed in Polygraphy 0.50.0. "
            "Use --val-range, which allows you to specify per-input data ranges, instead.");
    if (int_range_ && int_range_->min > int_range_->max)
        throw UsageError("--int-min (" + std::to_string(static_cast<int64_t>(int_range_->min)) +
                         ") is greater than --int-max (" + std::to_string(static_cast<int64_t>(int_range_->max)) + ")");
    if (float_range_ && float_range_->min > float_range_->max)
        throw UsageError("--float-min is greater than --float-max");

    if (const auto* model = group<ModelArgs>()) options_.input_metadata = model->input_shapes();

    load_inputs_paths_ = args.values("load_inputs_paths");
    if (!load_inputs_paths_.empty()) {
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

DataLoaderFn DataLoaderArgs::get_data_loader() const {
    if (!load_inputs_paths_.empty()) {
        InputList feeds;
        for (const auto& path : load_inputs_paths_) {
            InputList loaded = load_inputs(path);
            feeds.insert(feeds.end(), std::make_move_iterator(loaded.begin()), std::make_move_iterator(loaded.end()));
        }
        return data_loader_from_list(std::move(feeds));
    }
    if (int_range_ || float_range_) return with_type_ranges(options_, int_range_, float_range_);
    return DataLoader(options_).as_function();
}

namespace {

std::string dyn_shape_code(const DynShape& shape) {
    std::string code = "DynShape{";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const Dim& dim = shape[i];
        code += i ? ", " : "";
        code += !dim.is_dynamic()    ? "Dim::fixed(" + std::to_string(dim.value) + ")"
                : !dim.param.empty() ? "Dim::named(" + Script::quote(dim.param) + ")"
                                     : std::string("Dim::unknown()");
    }
    return code + "}";
}

std::string range_code(const ValRange& range) {
    return "ValRange{" + Script::number(range.min) + ", " + Script::number(range.max) + "}";
}

}  // namespace

bool DataLoaderArgs::add_to_script(Script& script) const {
    if (!load_inputs_paths_.empty()) {
        script.add_include("polygraphy/common/run_results.h");
        std::string setup = "InputList feeds;\n";
        for (const auto& path : load_inputs_paths_)
            setup +=
                "for (TensorMap& feed : load_inputs(" + Script::quote(path) + ")) feeds.push_back(std::move(feed));\n";
        script.set_data_loader(setup, "data_loader_from_list(std::move(feeds))");
        return true;
    }
    const DataLoader::Options defaults;
    std::string setup = "DataLoader::Options data_loader_options;\n";
    if (options_.seed != defaults.seed) setup += "data_loader_options.seed = " + std::to_string(options_.seed) + ";\n";
    if (options_.iterations != defaults.iterations)
        setup += "data_loader_options.iterations = " + std::to_string(options_.iterations) + ";\n";
    for (const auto& [name, range] : options_.val_range)
        setup += "data_loader_options.val_range.set(" + Script::quote(name) + ", " + range_code(range) + ");\n";
    for (const auto& [name, entry] : options_.input_metadata) {
        // --input-shapes gives shapes only; dtypes stay the model's.
        setup += "data_loader_options.input_metadata.add(" + Script::quote(name) + ", std::nullopt, " +
                 (entry.shape ? dyn_shape_code(*entry.shape) : std::string("std::nullopt")) + ");\n";
    }
    if (int_range_) setup += "data_loader_options.int_range = " + range_code(*int_range_) + ";\n";
    if (float_range_) setup += "data_loader_options.float_range = " + range_code(*float_range_) + ";\n";
    script.set_data_loader(setup, "DataLoader(data_loader_options).as_function()");
    return true;
}

}  // namespace polygraphy::tools
