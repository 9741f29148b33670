// Saved inputs and inference results read by path, whatever their format: the readers behind `run
// --load-inputs/--load-outputs`, `inspect data`, `data to-input` and `data convert`.
//
// common/run_results.h reads and writes Polygraphy's JSON only; the other formats need layers common
// cannot see (ONNX test-data folders decode TensorProtos with backend/onnx). This layer picks the
// reader: saved_data_format() recognises the path, and each loader below switches over the formats.
// Adding a format is an enum value, its rule in saved_data_format() and one case in each
// switch of src/job/saved_data.cpp (the compiler's -Wswitch points at every switch that lacks it).
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "polygraphy/common/run_results.h"

namespace polygraphy {

/// The formats saved inputs and results are read from.
enum class SavedDataFormat {
    kJson,          ///< Polygraphy's JSON (common/run_results.h)
    kOnnxTestData,  ///< an ONNX test-data folder (backend/onnx/test_data.h)
    kNpz,           ///< a numpy .npz archive (common/npz.h); its tensors view the file's mapping
    /// A folder of samples (a dataset): .npz, .json and .npy files and ONNX test-data folders, read in
    /// natural order of their names (sample_2 before sample_10); inputs only.
    kDatasetFolder,
};

/// The format of `path`: kOnnxTestData for a folder is_test_data_folder() accepts, kDatasetFolder for
/// any other folder, kNpz for a name ending in ".npz", else kJson (whose loader reports a missing or unreadable path).
/// Looks at the file system only; reads no data.
SavedDataFormat saved_data_format(const std::string& path);

/// The inputs saved at `path` (`--load-inputs`): load_inputs(), load_test_data_inputs() or
/// npz::load(); for a dataset folder, each of its files in natural order by these readers, and a .npy
/// file as one sample of the model's only input (FormatError without a model of one input, and for a
/// file that matches no layout; names starting with '.' are skipped). Test data is read with the graph of the model at
/// `model_path` when given (its structure only), so that unnamed values pair with the model's inputs by position.
/// Throws as they do (FormatError naming the file or folder), and FormatError for an .npz that holds results.
InputList load_saved_inputs(const std::string& path, const std::optional<std::string>& model_path = std::nullopt);

/// The results saved at `path` (`--load-outputs`): RunResults::load(), load_test_data_outputs() or
/// npz::load() (FormatError for an .npz that holds inputs).
RunResults load_saved_results(const std::string& path, const std::optional<std::string>& model_path = std::nullopt);

/// For tools that take either kind (`inspect data`): load_run_results_or_inputs() for JSON,
/// npz::load() for .npz; a test-data folder is inputs when any of its sets holds input files, else
/// results. Logs as the
/// loaders above do for test data, nothing for JSON.
std::variant<RunResults, InputList> load_saved_results_or_inputs(const std::string& path);

/// `data to-input`: merges inputs and results, in order, into one input list, each path read by
/// load_saved_results_or_inputs(). Iteration i of the result is the union of iteration i of every
/// inputs file and of every runner of every results file; a later tensor of the same name replaces an
/// earlier one. Files with different iteration counts log a warning (shorter ones leave later
/// iterations incomplete). Unlike Polygraphy, whose padding shares one dict between the new
/// iterations, every iteration keeps its own tensors. Throws like the loaders, naming the bad path.
InputList merge_into_inputs(const std::vector<std::string>& paths);

}  // namespace polygraphy
