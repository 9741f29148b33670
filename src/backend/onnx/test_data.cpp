#include "polygraphy/backend/onnx/test_data.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <onnx/onnx-data_pb.h>

#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSetPrefix = "test_data_set_";

// The number N of "<prefix>N<suffix>" (digits only), or nullopt.
std::optional<long long> numbered(const std::string& name, const std::string& prefix, const std::string& suffix) {
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        return std::nullopt;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 12 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return std::stoll(digits);
}

// The entries of `folder` named "<prefix>N<suffix>", in numeric order.
std::vector<fs::path> numbered_entries(const fs::path& folder, const std::string& prefix, const std::string& suffix,
                                       bool directories) {
    std::vector<std::pair<long long, fs::path>> found;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(folder, error)) {
        if (entry.is_directory(error) != directories) continue;
        if (auto number = numbered(entry.path().filename().string(), prefix, suffix))
            found.emplace_back(*number, entry.path());
    }
    std::sort(found.begin(), found.end());
    std::vector<fs::path> paths;
    for (auto& item : found) paths.push_back(std::move(item.second));
    return paths;
}

bool holds_pb_files(const fs::path& folder) {
    return !numbered_entries(folder, "input_", ".pb", false).empty() ||
           !numbered_entries(folder, "output_", ".pb", false).empty();
}

TestDataValue sequence_value(const onnx::SequenceProto& proto, const std::string& path) {
    if (proto.elem_type() != onnx::SequenceProto::TENSOR && proto.elem_type() != onnx::SequenceProto::UNDEFINED)
        throw UnsupportedError(fmt::format("{}: only sequences of tensors are supported", path));
    TestDataValue value;
    value.kind = TestDataValue::Kind::kSequence;
    for (const auto& tensor : proto.tensor_values()) value.elements.push_back(tensor_from_proto(tensor));
    if (!value.elements.empty()) value.element_dtype = value.elements.front().dtype();
    return value;
}

template <typename Proto>
Proto parse_proto(const std::string& bytes, const std::string& path, const char* what) {
    Proto proto;
    if (!proto.ParseFromString(bytes)) throw FormatError(fmt::format("{} is not a valid {}", path, what));
    return proto;
}

const onnx::TypeProto* declared_type(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& infos,
                                     std::size_t index, const std::set<std::string>& initializers) {
    std::size_t position = 0;
    for (const auto& info : infos) {
        if (initializers.contains(info.name())) continue;  // inputs that are weights take no file
        if (position++ == index) return info.has_type() ? &info.type() : nullptr;
    }
    return nullptr;
}

std::vector<std::string> value_names(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& infos,
                                     const std::set<std::string>& initializers) {
    std::vector<std::string> names;
    for (const auto& info : infos)
        if (!initializers.contains(info.name())) names.push_back(info.name());
    return names;
}

TestDataValues read_values(const fs::path& folder, const char* prefix, const onnx::GraphProto* graph, bool inputs) {
    std::set<std::string> initializers;
    std::vector<std::string> names;
    if (graph) {
        for (const auto& initializer : graph->initializer()) initializers.insert(initializer.name());
        names = value_names(inputs ? graph->input() : graph->output(), initializers);
    }
    TestDataValues values;
    std::set<std::string> seen;
    const auto files = numbered_entries(folder, prefix, ".pb", false);
    for (std::size_t k = 0; k < files.size(); ++k) {
        const std::string path = files[k].string();
        const onnx::TypeProto* type =
            graph ? declared_type(inputs ? graph->input() : graph->output(), k, initializers) : nullptr;
        std::string name;
        TestDataValue value = read_test_data_value(path, type, &name);
        if (graph && (name.empty() || std::find(names.begin(), names.end(), name) == names.end())) {
            if (k >= names.size())
                throw FormatError(
                    fmt::format("{}: the model has only {} {}", path, names.size(), inputs ? "input(s)" : "output(s)"));
            name = names[k];
        }
        if (name.empty())
            throw FormatError(
                fmt::format("{} holds an unnamed value; without the model, test data needs named tensors", path));
        if (!seen.insert(name).second)
            throw FormatError(
                fmt::format("{} holds '{}', which an earlier file of {} already holds", path, name, folder.string()));
        values.emplace_back(std::move(name), std::move(value));
    }
    return values;
}

// The tensors of `values`, for runners and RunResults, which take tensors only.
TensorMap tensors_of(const TestDataValues& values, const std::string& folder) {
    TensorMap tensors;
    for (const auto& [name, value] : values) {
        if (value.kind != TestDataValue::Kind::kTensor)
            throw FormatError(
                fmt::format("{}: '{}' is a {}; only tensors can be loaded as inference data", folder, name,
                            value.kind == TestDataValue::Kind::kSequence ? "sequence" : "empty optional"));
        tensors.set(name, value.tensor);
    }
    return tensors;
}

std::string folder_name(const std::string& path) {
    std::error_code error;
    fs::path normal = fs::absolute(path, error).lexically_normal();
    if (!normal.has_filename()) normal = normal.parent_path();  // "case/" -> "case"
    return normal.filename().string();
}

void write_proto(const fs::path& path, const google::protobuf::MessageLite& proto) {
    write_file_atomically(path.string(), proto.SerializeAsString());
}

}  // namespace

TestDataValue read_test_data_value(const std::string& path, const onnx::TypeProto* type, std::string* name) {
    const bool sequence = type && type->has_sequence_type();
    const bool optional = type && type->has_optional_type();
    if (!sequence && !optional) {
        TestDataValue value;
        value.tensor = tensor_from_pb_file(path, name);
        if (type && type->has_tensor_type() && type->tensor_type().elem_type() == onnx::TensorProto::BFLOAT16 &&
            value.tensor.dtype() == DataType::kUInt16)
            value.tensor = Tensor::from_bytes(DataType::kBFloat16, value.tensor.shape(), value.tensor.data(),
                                              value.tensor.nbytes());
        return value;
    }
    const std::string bytes = read_file(path);
    if (sequence) {
        const auto proto = parse_proto<onnx::SequenceProto>(bytes, path, "SequenceProto");
        if (name) *name = proto.name();
        return sequence_value(proto, path);
    }
    const auto proto = parse_proto<onnx::OptionalProto>(bytes, path, "OptionalProto");
    if (name) *name = proto.name();
    if (proto.has_tensor_value()) {
        TestDataValue value;
        value.tensor = tensor_from_proto(proto.tensor_value());
        return value;
    }
    if (proto.has_sequence_value()) return sequence_value(proto.sequence_value(), path);
    TestDataValue value;
    value.kind = TestDataValue::Kind::kEmptyOptional;
    return value;
}

bool is_test_data_folder(const std::string& path) {
    std::error_code error;
    if (!fs::is_directory(path, error)) return false;
    return holds_pb_files(path) || !numbered_entries(path, kSetPrefix, "", true).empty();
}

std::vector<std::string> find_test_data_sets(const std::string& path) {
    std::error_code error;
    if (!fs::is_directory(path, error)) throw FormatError(fmt::format("{} is not a folder", path));
    if (holds_pb_files(path)) return {path};
    std::vector<std::string> sets;
    for (const auto& set : numbered_entries(path, kSetPrefix, "", true)) sets.push_back(set.string());
    if (sets.empty())
        throw FormatError(
            fmt::format("{} holds neither input_N.pb/output_N.pb files nor {}N folders", path, kSetPrefix));
    return sets;
}

bool test_data_holds_inputs(const std::string& path) {
    const std::vector<std::string> sets = find_test_data_sets(path);
    return std::any_of(sets.begin(), sets.end(),
                       [](const std::string& set) { return !numbered_entries(set, "input_", ".pb", false).empty(); });
}

TestDataSet read_test_data_set(const std::string& folder, const onnx::GraphProto* graph) {
    TestDataSet set;
    set.path = folder;
    set.inputs = read_values(folder, "input_", graph, true);
    set.outputs = read_values(folder, "output_", graph, false);
    return set;
}

InputList load_test_data_inputs(const std::string& path, const onnx::GraphProto* graph) {
    logger().info(fmt::format("Loading input data from {}", path));
    InputList inputs;
    for (const auto& folder : find_test_data_sets(path))
        inputs.push_back(tensors_of(read_values(folder, "input_", graph, true), folder));
    return inputs;
}

RunResults load_test_data_outputs(const std::string& path, const onnx::GraphProto* graph) {
    logger().info(fmt::format("Loading inference results from {}", path));
    const std::string runner = folder_name(path);
    std::vector<IterationResult> iterations;
    for (const auto& folder : find_test_data_sets(path))
        iterations.push_back(
            IterationResult{tensors_of(read_values(folder, "output_", graph, false), folder), std::nullopt, runner});
    RunResults results;
    results.add(std::move(iterations), runner);
    return results;
}

void save_test_data(const std::string& folder, const InputList& inputs, const std::vector<TensorMap>& outputs) {
    if (!inputs.empty() && !outputs.empty() && inputs.size() != outputs.size())
        throw PolygraphyException(fmt::format("Cannot save test data: {} iteration(s) of inputs but {} of outputs",
                                              inputs.size(), outputs.size()));
    const std::size_t count = std::max(inputs.size(), outputs.size());
    logger().info(fmt::format("Saving ONNX test data ({} data set(s)) to {}", count, folder));
    const fs::path root(folder);
    std::error_code error;
    fs::create_directories(root, error);
    if (error)
        throw PolygraphyException(
            fmt::format("Could not write {}: cannot create the folder: {}", folder, error.message()));
    std::string staging_template = (root / ".test_data.tmp.XXXXXX").string();
    if (!mkdtemp(staging_template.data()))
        throw PolygraphyException(fmt::format("Could not write {}: cannot create a temporary folder", folder));
    const fs::path staging(staging_template);
    try {
        for (std::size_t i = 0; i < count; ++i) {
            const fs::path set = staging / (kSetPrefix + std::to_string(i));
            fs::create_directory(set);
            auto write_all = [&](const InputList& maps, const char* prefix) {
                if (maps.empty()) return;
                int k = 0;
                for (const auto& [name, tensor] : maps[i])
                    write_proto(set / fmt::format("{}{}.pb", prefix, k++), tensor_to_proto(tensor, name));
            };
            write_all(inputs, "input_");
            write_all(outputs, "output_");
        }
        for (std::size_t i = 0; i < count; ++i) {
            const fs::path target = root / (kSetPrefix + std::to_string(i));
            fs::remove_all(target);
            fs::rename(staging / target.filename(), target);
        }
    } catch (const std::exception& failure) {
        fs::remove_all(staging, error);
        throw PolygraphyException(fmt::format("Could not write {}: {}", folder, failure.what()));
    }
    fs::remove_all(staging, error);
}

}  // namespace polygraphy
