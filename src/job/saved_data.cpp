// The readers of saved inputs and results by path (saved_data.h): the one place that knows every
// format, so `run`, `inspect data` and the `data` tools accept the same paths.
#include "polygraphy/job/saved_data.h"

#include <fmt/format.h>

#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/backend/onnx/test_data.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npz.h"

namespace polygraphy {

SavedDataFormat saved_data_format(const std::string& path) {
    if (is_test_data_folder(path)) return SavedDataFormat::kOnnxTestData;
    if (npz::is_npz_path(path)) return SavedDataFormat::kNpz;
    return SavedDataFormat::kJson;
}

namespace {

// The structure of the model test data pairs with (nullptr without one).
OnnxModel structure_of(const std::optional<std::string>& model_path) {
    return model_path ? onnx_structure_from_path(*model_path) : nullptr;
}

}  // namespace

InputList load_saved_inputs(const std::string& path, const std::optional<std::string>& model_path) {
    switch (saved_data_format(path)) {
        case SavedDataFormat::kJson:
            return load_inputs(path);
        case SavedDataFormat::kOnnxTestData: {
            const OnnxModel model = structure_of(model_path);
            return load_test_data_inputs(path, model ? &model->graph() : nullptr);
        }
        case SavedDataFormat::kNpz: {
            logger().info(fmt::format("Loading input data from {}", path));
            auto data = npz::load(path);
            if (auto* inputs = std::get_if<InputList>(&data)) return std::move(*inputs);
            throw FormatError(fmt::format("{}: holds inference results (outputs/ members), not inputs", path));
        }
    }
    throw InternalError("unknown saved-data format");
}

RunResults load_saved_results(const std::string& path, const std::optional<std::string>& model_path) {
    switch (saved_data_format(path)) {
        case SavedDataFormat::kJson:
            return RunResults::load(path);
        case SavedDataFormat::kOnnxTestData: {
            const OnnxModel model = structure_of(model_path);
            return load_test_data_outputs(path, model ? &model->graph() : nullptr);
        }
        case SavedDataFormat::kNpz: {
            logger().info(fmt::format("Loading inference results from {}", path));
            auto data = npz::load(path);
            if (auto* results = std::get_if<RunResults>(&data)) return std::move(*results);
            throw FormatError(fmt::format(
                "{}: holds inputs, not inference results (whose members are outputs/<runner>/<iteration>/<output>.npy)",
                path));
        }
    }
    throw InternalError("unknown saved-data format");
}

std::variant<RunResults, InputList> load_saved_results_or_inputs(const std::string& path) {
    switch (saved_data_format(path)) {
        case SavedDataFormat::kJson:
            return load_run_results_or_inputs(path);
        case SavedDataFormat::kOnnxTestData:
            if (test_data_holds_inputs(path)) return load_test_data_inputs(path);
            return load_test_data_outputs(path);
        case SavedDataFormat::kNpz:
            return npz::load(path);
    }
    throw InternalError("unknown saved-data format");
}

InputList merge_into_inputs(const std::vector<std::string>& paths) {
    InputList inputs;
    auto update = [&](const std::vector<const TensorMap*>& iterations, const std::string& path) {
        if (!inputs.empty() && inputs.size() != iterations.size())
            logger().warning(fmt::format(
                "The provided files have different numbers of iterations.\nNote: Inputs currently contains {} "
                "iterations, but the data in {} contains {} iterations. Some iterations will contain incomplete data. ",
                inputs.size(), path, iterations.size()));
        if (inputs.size() < iterations.size()) inputs.resize(iterations.size());
        for (std::size_t i = 0; i < iterations.size(); ++i)
            for (const auto& [name, tensor] : *iterations[i]) inputs[i].set(name, tensor);
    };
    for (const auto& path : paths) {
        const auto data = load_saved_results_or_inputs(path);
        if (const auto* results = std::get_if<RunResults>(&data)) {
            for (const auto& [runner, iterations] : results->lst) {
                std::vector<const TensorMap*> maps;
                for (const auto& iteration : iterations) maps.push_back(&iteration.outputs);
                update(maps, path);
            }
        } else {
            std::vector<const TensorMap*> maps;
            for (const auto& feed : std::get<InputList>(data)) maps.push_back(&feed);
            update(maps, path);
        }
    }
    return inputs;
}

}  // namespace polygraphy
