// The readers of saved inputs and results by path (saved_data.h): the one place that knows every
// format, so `run`, `inspect data` and the `data` tools accept the same paths.
#include "polygraphy/job/saved_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>

#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/backend/onnx/test_data.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npy.h"
#include "polygraphy/common/npz.h"

namespace polygraphy {

SavedDataFormat saved_data_format(const std::string& path) {
    if (is_test_data_folder(path)) return SavedDataFormat::kOnnxTestData;
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) return SavedDataFormat::kDatasetFolder;
    if (npz::is_npz_path(path)) return SavedDataFormat::kNpz;
    return SavedDataFormat::kJson;
}

namespace {

// The structure of the model test data pairs with (nullptr without one).
OnnxModel structure_of(const std::optional<std::string>& model_path) {
    return model_path ? onnx_structure_from_path(*model_path) : nullptr;
}

// Names compared with their runs of digits as numbers: sample_2 before sample_10.
bool natural_less(const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
            std::size_t end_a = i, end_b = j;
            while (end_a < a.size() && std::isdigit(static_cast<unsigned char>(a[end_a]))) ++end_a;
            while (end_b < b.size() && std::isdigit(static_cast<unsigned char>(b[end_b]))) ++end_b;
            std::string_view da(a.data() + i, end_a - i), db(b.data() + j, end_b - j);
            while (da.size() > 1 && da.front() == '0') da.remove_prefix(1);
            while (db.size() > 1 && db.front() == '0') db.remove_prefix(1);
            if (da.size() != db.size()) return da.size() < db.size();
            if (da != db) return da < db;
            i = end_a;
            j = end_b;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
    return a < b;
}

// Every sample of a dataset folder, file by file.
InputList load_dataset_folder(const std::string& folder, const std::optional<std::string>& model_path) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        const std::string name = entry.path().filename().string();
        if (!name.empty() && name.front() != '.') names.push_back(name);
    }
    std::sort(names.begin(), names.end(), natural_less);
    if (names.empty()) throw FormatError(fmt::format("{}: the dataset folder is empty", folder));
    logger().info(fmt::format("Loading a dataset of {} file(s) from {}", names.size(), folder));
    std::optional<std::string> npy_input;  // the model's only input, for .npy samples
    InputList samples;
    for (const auto& name : names) {
        const std::string path = (std::filesystem::path(folder) / name).string();
        const std::string extension = std::filesystem::path(name).extension().string();
        InputList loaded;
        if (is_test_data_folder(path)) {
            const OnnxModel model = structure_of(model_path);
            loaded = load_test_data_inputs(path, model ? &model->graph() : nullptr);
        } else if (std::filesystem::is_directory(path)) {
            throw FormatError(
                fmt::format("{}: the folder {} matches no dataset layout (an ONNX test-data set holds "
                            "input_K.pb files)",
                            folder, name));
        } else if (extension == ".npz" || extension == ".json") {
            loaded = load_saved_inputs(path, model_path);
        } else if (extension == ".npy") {
            if (!npy_input) {
                const OnnxModel model = structure_of(model_path);
                const TensorMetadata inputs = model ? get_onnx_input_metadata(model->graph()) : TensorMetadata{};
                if (inputs.size() != 1)
                    throw FormatError(fmt::format(
                        "{}: {} holds one tensor, which can only be the input of a model with one input{}; save "
                        "samples of several inputs as .npz files",
                        folder, name,
                        model ? fmt::format(" (the model has {})", inputs.size()) : std::string(" (no model given)")));
                npy_input = inputs.begin()->first;
            }
            TensorMap feed;
            feed.set(*npy_input, npy::load_file(path));
            loaded.push_back(std::move(feed));
        } else {
            throw FormatError(
                fmt::format("{}: {} matches no dataset layout (expected .npz, .npy or .json files, "
                            "or ONNX test-data sets)",
                            folder, name));
        }
        samples.insert(samples.end(), std::make_move_iterator(loaded.begin()), std::make_move_iterator(loaded.end()));
    }
    return samples;
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
        case SavedDataFormat::kDatasetFolder:
            return load_dataset_folder(path, model_path);
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
        case SavedDataFormat::kDatasetFolder:
            throw FormatError(fmt::format(
                "{}: a dataset folder holds inputs (give it to --load-inputs), not inference results", path));
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
        case SavedDataFormat::kDatasetFolder:
            return load_dataset_folder(path, std::nullopt);
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
