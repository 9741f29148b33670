// ONNX test-data folders, as the ONNX backend tests and model zoo ship them:
//
//     <case>/test_data_set_0/input_0.pb, input_1.pb, ..., output_0.pb, ...
//
// Each file is a serialized TensorProto, or a SequenceProto / OptionalProto where the graph declares
// a sequence or optional value. Files are taken in numeric order (input_2 before input_10). A
// folder is "a data set" when it holds such files itself, and "a case" when it holds
// test_data_set_N folders (taken in numeric order); every function here accepts both.
//
// With the model's graph, unnamed files take the name of the graph input or output at their
// position and are parsed by its declared type. Without it (`--load-inputs DIR`), every file must
// be a named TensorProto.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "polygraphy/common/run_results.h"
#include "polygraphy/common/tensor.h"

namespace polygraphy {

/// A value of a test-data file.
struct TestDataValue {
    /// What the file holds.
    enum class Kind { kTensor, kSequence, kEmptyOptional };
    Kind kind = Kind::kTensor;                    ///< what the file holds
    Tensor tensor;                                ///< kTensor (also an optional holding a tensor)
    std::vector<Tensor> elements;                 ///< kSequence
    DataType element_dtype = DataType::kFloat32;  ///< kSequence: the elements' type (also when empty)
};

/// Named values in file order.
using TestDataValues = std::vector<std::pair<std::string, TestDataValue>>;

/// One test_data_set folder.
struct TestDataSet {
    std::string path;        ///< the folder
    TestDataValues inputs;   ///< input_K.pb
    TestDataValues outputs;  ///< output_K.pb
};

/// Reads one .pb file. `type` (the graph's declared type of the value, may be null) decides the
/// proto: sequence and optional types read a SequenceProto / OptionalProto, anything else a
/// TensorProto; a tensor the graph declares bfloat16 but stored as uint16 bit patterns (as some
/// suites do) is reinterpreted. `name` receives the proto's name (may be empty). FormatError naming
/// the file when it is not that proto or its data is inconsistent; UnsupportedError for sequences of
/// other than tensors.
TestDataValue read_test_data_value(const std::string& path, const onnx::TypeProto* type = nullptr,
                                   std::string* name = nullptr);

/// Whether `path` is a folder holding input_K.pb/output_K.pb files or test_data_set_N folders.
bool is_test_data_folder(const std::string& path);

/// The data sets of `path`: `path` itself when it holds .pb files, else its test_data_set_N folders
/// in numeric order. FormatError when it is neither.
std::vector<std::string> find_test_data_sets(const std::string& path);

/// Whether any data set of `path` holds input_K.pb files (then it is read as inputs where either
/// kind is accepted). FormatError as find_test_data_sets().
bool test_data_holds_inputs(const std::string& path);

/// Reads one data set folder (see the file comment for `graph`). FormatError for an unnamed file
/// without a graph, more files than the graph has inputs or outputs, or two files of one name.
TestDataSet read_test_data_set(const std::string& folder, const onnx::GraphProto* graph = nullptr);

/// The inputs of every data set of `path`, one iteration per set (`--load-inputs DIR`). Logs
/// "Loading input data from <path>". With `graph` (the model's), values pair with its inputs as
/// read_test_data_set() pairs them (unnamed ones by position); without it an unnamed value is a
/// FormatError. FormatError for a non-tensor value, and like read_test_data_set().
InputList load_test_data_inputs(const std::string& path, const onnx::GraphProto* graph = nullptr);

/// The outputs of every data set of `path` as RunResults: one runner, named after the folder
/// (`test_data_set_0`, or the case folder's name), one iteration per set (`--load-outputs DIR`).
/// Logs "Loading inference results from <path>". Errors as load_test_data_inputs().
RunResults load_test_data_outputs(const std::string& path, const onnx::GraphProto* graph = nullptr);

/// Writes `folder`/test_data_set_<i>/input_<k>.pb and output_<k>.pb (named TensorProtos, in map
/// order) for i < max(inputs.size(), outputs.size()); either list may be empty, and when both are
/// given their sizes must match (PolygraphyException otherwise). The sets are written into a
/// temporary folder beside them and renamed into place, replacing sets of the same number, so a
/// failure leaves no partial set. Logs "Saving ONNX test data (N data set(s)) to <folder>".
void save_test_data(const std::string& folder, const InputList& inputs, const std::vector<TensorMap>& outputs);

}  // namespace polygraphy
