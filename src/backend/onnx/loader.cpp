// ONNX loaders: reading, parsing (with external data), re-marking outputs, saving.
#include "polygraphy/backend/onnx/loader.h"
#include "backend/onnx/structure_unlogged.h"

#include <charconv>
#include <climits>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/data_loader.h"

namespace polygraphy {
namespace fs = std::filesystem;

namespace {

// Protobuf's own error reports go through our logger (verbose) instead of stderr.
void route_protobuf_logs() {
    static std::once_flag once;
    std::call_once(once, [] {
        google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string& message) {
            logger().verbose("protobuf: " + message);
        });
    });
}

constexpr std::size_t kProtobufLimit = static_cast<std::size_t>(INT_MAX);  // 2 GiB - 1

OnnxModel parse_model(std::string_view bytes, const std::string& what) {
    const std::string prefix = what + " is not a valid ONNX model: ";
    if (bytes.empty()) throw FormatError(prefix + "it is empty");
    if (bytes.size() > kProtobufLimit) {
        throw FormatError(prefix +
                          "it is larger than 2 GiB, which protobuf cannot parse (store the weights as external data)");
    }
    route_protobuf_logs();
    auto model = std::make_shared<onnx::ModelProto>();
    google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(INT_MAX);
    if (!model->ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
        throw FormatError(prefix + "protobuf parsing failed (corrupt or truncated file?)");
    }
    if (!model->has_graph()) throw FormatError(prefix + "it has no graph");
    return model;
}

// ---- external data ------------------------------------------------------------------------------

std::string in_quotes(const std::string& text) {
    return "'" + text + "'";
}

// True when `path` is `folder` or lies below it (both canonical).
bool is_within(const fs::path& path, const fs::path& folder) {
    auto p = path.begin();
    for (auto f = folder.begin(); f != folder.end(); ++f, ++p) {
        if (f->empty()) continue;  // trailing separator
        if (p == path.end() || *p != *f) return false;
    }
    return true;
}

uint64_t parse_external_number(const onnx::TensorProto& tensor, const std::string& key, const std::string& value) {
    uint64_t number = 0;
    const char* end = value.data() + value.size();
    auto [ptr, ec] = std::from_chars(value.data(), end, number);
    if (value.empty() || ec != std::errc() || ptr != end) {
        throw FormatError("Tensor " + in_quotes(tensor.name()) + " has an invalid external data " + key + ": " +
                          in_quotes(value) + " (expected a non-negative integer)");
    }
    return number;
}

// Bytes the tensor's dims and dtype call for; FormatError for dtypes that cannot be stored externally.
uint64_t expected_external_bytes(const onnx::TensorProto& tensor) {
    const DataType dtype = dtype_from_onnx(tensor.data_type());
    if (dtype == DataType::kUndefined || dtype == DataType::kString) {
        throw FormatError("Tensor " + in_quotes(tensor.name()) + " has external data but data type " +
                          std::to_string(tensor.data_type()) + ", which cannot be stored externally");
    }
    constexpr uint64_t kMax = uint64_t{1} << 58;
    uint64_t numel = 1;
    for (int64_t dim : tensor.dims()) {
        if (dim < 0 || (dim != 0 && numel > kMax / static_cast<uint64_t>(dim))) {
            throw FormatError("Tensor " + in_quotes(tensor.name()) + " has invalid dimensions");
        }
        numel *= static_cast<uint64_t>(dim);
    }
    if (dtype == DataType::kInt4 || dtype == DataType::kUInt4) return numel / 2 + numel % 2;
    return numel * dtype_size(dtype);
}

class ExternalDataLoader {
public:
    explicit ExternalDataLoader(fs::path folder) : folder_(std::move(folder)) {}

    void load(onnx::TensorProto& tensor) {
        const std::string label = "Tensor " + in_quotes(tensor.name());
        std::string location;
        std::optional<uint64_t> offset;
        std::optional<uint64_t> length;
        for (const auto& entry : tensor.external_data()) {
            if (entry.key() == "location") {
                location = entry.value();
            } else if (entry.key() == "offset") {
                offset = parse_external_number(tensor, "offset", entry.value());
            } else if (entry.key() == "length") {
                length = parse_external_number(tensor, "length", entry.value());
            }
        }
        if (location.empty()) throw FormatError(label + " is marked as external data but has no location");

        const fs::path relative(location);
        if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory()) {
            throw PolygraphyException(label + " has an absolute external data location: " + in_quotes(location) +
                                      "\nNote: External data must be given relative to the model's folder");
        }
        const fs::path normal = relative.lexically_normal();
        if (!normal.empty() && *normal.begin() == "..") {
            throw PolygraphyException(
                label + " has an external data location that leaves the external data folder: " + in_quotes(location));
        }
        const fs::path& base = base_folder();
        std::error_code error;
        const fs::path resolved = fs::canonical(base / relative, error);
        if (error) {
            throw PolygraphyException(label + ": external data file " + in_quotes(location) + " was not found in " +
                                      in_quotes(base.string()) + " (" + error.message() + ")");
        }
        if (!is_within(resolved, base)) {
            throw PolygraphyException(label + ": external data location " + in_quotes(location) + " resolves to " +
                                      in_quotes(resolved.string()) + ", outside the external data folder " +
                                      in_quotes(base.string()));
        }
        if (!fs::is_regular_file(resolved, error)) {
            throw PolygraphyException(label + ": external data location " + in_quotes(location) +
                                      " is not a regular file");
        }
        const uint64_t file_size = fs::file_size(resolved, error);
        if (error) throw PolygraphyException(label + ": cannot read external data file " + in_quotes(location));

        const uint64_t start = offset.value_or(0);
        if (start > file_size) {
            throw FormatError(label + ": external data offset " + std::to_string(start) + " is past the end of " +
                              in_quotes(location) + " (" + std::to_string(file_size) + " bytes)");
        }
        const uint64_t expected = expected_external_bytes(tensor);
        if (length && *length != expected) {
            throw FormatError(label + ": external data length " + std::to_string(*length) +
                              " disagrees with its shape and dtype, which need " + std::to_string(expected) + " bytes");
        }
        if (expected > file_size - start) {
            throw FormatError(label + ": external data of " + std::to_string(expected) + " bytes at offset " +
                              std::to_string(start) + " runs past the end of " + in_quotes(location) + " (" +
                              std::to_string(file_size) + " bytes)");
        }
        if (expected > kProtobufLimit) {
            throw UnsupportedError(label + ": external tensors over 2 GiB cannot be loaded into memory models");
        }

        std::string data(static_cast<std::size_t>(expected), '\0');
        std::ifstream file(resolved, std::ios::binary);
        file.seekg(static_cast<std::streamoff>(start));
        file.read(data.data(), static_cast<std::streamsize>(expected));
        if (!file || static_cast<uint64_t>(file.gcount()) != expected) {
            throw PolygraphyException(label + ": failed to read external data from " + in_quotes(location));
        }
        tensor.set_raw_data(std::move(data));
        tensor.clear_external_data();
        tensor.clear_data_location();
        ++loaded_;
    }

    std::size_t loaded() const { return loaded_; }

private:
    // Canonical form of the folder, resolved on first use so that models without external data never need it.
    const fs::path& base_folder() {
        if (!base_) {
            std::error_code error;
            fs::path canonical = fs::canonical(folder_, error);
            if (error || !fs::is_directory(canonical)) {
                throw PolygraphyException("External data folder does not exist: " + in_quotes(folder_.string()));
            }
            logger().verbose("Loading external data from: " + canonical.string());
            base_ = std::move(canonical);
        }
        return *base_;
    }

    fs::path folder_;
    std::optional<fs::path> base_;
    std::size_t loaded_ = 0;
};

template <typename Visitor>
void visit_tensors(onnx::GraphProto& graph, Visitor& visit);

template <typename Visitor>
void visit_node_tensors(onnx::NodeProto& node, Visitor& visit) {
    for (auto& attribute : *node.mutable_attribute()) {
        if (attribute.has_t()) visit(*attribute.mutable_t());
        for (auto& tensor : *attribute.mutable_tensors()) visit(tensor);
        if (attribute.has_sparse_tensor()) {
            visit(*attribute.mutable_sparse_tensor()->mutable_values());
            visit(*attribute.mutable_sparse_tensor()->mutable_indices());
        }
        for (auto& sparse : *attribute.mutable_sparse_tensors()) {
            visit(*sparse.mutable_values());
            visit(*sparse.mutable_indices());
        }
        if (attribute.has_g()) visit_tensors(*attribute.mutable_g(), visit);
        for (auto& subgraph : *attribute.mutable_graphs()) visit_tensors(subgraph, visit);
    }
}

// Calls visit(TensorProto&) for every tensor stored in the graph: initializers, sparse initializers,
// tensor attributes (Constant values), recursing into subgraphs (If/Loop/Scan bodies).
template <typename Visitor>
void visit_tensors(onnx::GraphProto& graph, Visitor& visit) {
    for (auto& tensor : *graph.mutable_initializer()) visit(tensor);
    for (auto& sparse : *graph.mutable_sparse_initializer()) {
        visit(*sparse.mutable_values());
        visit(*sparse.mutable_indices());
    }
    for (auto& node : *graph.mutable_node()) visit_node_tensors(node, visit);
}

void load_external_data(onnx::ModelProto& model, const fs::path& folder) {
    ExternalDataLoader loader(folder);
    auto visit = [&loader](onnx::TensorProto& tensor) {
        if (tensor.data_location() == onnx::TensorProto::EXTERNAL) loader.load(tensor);
    };
    visit_tensors(*model.mutable_graph(), visit);
    for (auto& function : *model.mutable_functions()) {
        for (auto& node : *function.mutable_node()) visit_node_tensors(node, visit);
    }
    if (loader.loaded() > 0)
        logger().verbose("Loaded external data for " + std::to_string(loader.loaded()) + " tensor(s)");
}

}  // namespace

bool onnx_file_may_use_external_data(const std::string& path) {
    OnnxModel structure;
    try {
        structure = onnx_structure_from_path_unlogged(path);  // tensor values skipped unread; a probe, not a load
    } catch (const FormatError&) {
        return true;  // the full loader gives the real error
    }
    bool external = false;
    auto visit = [&external](onnx::TensorProto& tensor) {
        if (tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.external_data_size() > 0) external = true;
    };
    visit_tensors(*structure->mutable_graph(), visit);
    for (auto& function : *structure->mutable_functions())
        for (auto& node : *function.mutable_node()) visit_node_tensors(node, visit);
    return external;
}

namespace {

// ---- outputs ------------------------------------------------------------------------------------

std::string join_names(const std::vector<std::string>& names) {
    std::string joined;
    for (const auto& name : names) joined += (joined.empty() ? "" : ", ") + name;
    return joined;
}

// Every tensor name of the top-level graph, in a stable order: inputs, initializers, node outputs.
std::vector<std::string> all_tensor_names(const onnx::GraphProto& graph) {
    std::vector<std::string> names;
    std::unordered_set<std::string> seen;
    auto add = [&](const std::string& name) {
        if (!name.empty() && seen.insert(name).second) names.push_back(name);
    };
    for (const auto& input : graph.input()) add(input.name());
    for (const auto& initializer : graph.initializer()) add(initializer.name());
    for (const auto& node : graph.node()) {
        for (const auto& output : node.output()) add(output);
    }
    return names;
}

void check_tensors_exist(const std::vector<std::string>& requested, const std::vector<std::string>& known,
                         const std::string& what) {
    const std::unordered_set<std::string> known_set(known.begin(), known.end());
    for (const auto& name : requested) {
        if (known_set.count(name)) continue;
        std::string message =
            "Tensor " + in_quotes(name) + " does not exist in the model, so it cannot be " + what + ".";
        if (auto match = closest_match(name, known)) message += " Did you mean " + in_quotes(*match) + "?";
        throw PolygraphyException(message);
    }
}

onnx::ValueInfoProto typed_value_info(const onnx::GraphProto& graph, const std::string& name) {
    for (const auto* list : {&graph.value_info(), &graph.output(), &graph.input()}) {
        for (const auto& info : *list) {
            if (info.name() == name && info.has_type()) return info;
        }
    }
    onnx::ValueInfoProto info;
    info.set_name(name);
    for (const auto& initializer : graph.initializer()) {
        if (initializer.name() != name) continue;
        auto* tensor_type = info.mutable_type()->mutable_tensor_type();
        tensor_type->set_elem_type(initializer.data_type());
        auto* shape = tensor_type->mutable_shape();
        for (int64_t dim : initializer.dims()) shape->add_dim()->set_dim_value(dim);
        break;
    }
    return info;
}

}  // namespace

// ---- bytes --------------------------------------------------------------------------------------

std::string bytes_from_path(const std::string& path) {
    std::error_code error;
    if (!fs::exists(path, error)) throw PolygraphyException("File does not exist: " + in_quotes(path));
    if (fs::is_directory(path, error))
        throw PolygraphyException("Expected a file, but got a directory: " + in_quotes(path));
    std::ifstream file(path, std::ios::binary);
    if (!file) throw PolygraphyException("Could not open file: " + in_quotes(path));
    if (fs::is_regular_file(path, error)) {
        // One allocation and one read for (possibly large) model files.
        const auto size = fs::file_size(path, error);
        if (!error) {
            std::string contents(static_cast<std::size_t>(size), '\0');
            file.read(contents.data(), static_cast<std::streamsize>(size));
            if (static_cast<uintmax_t>(file.gcount()) != size) {
                throw PolygraphyException("Could not read file: " + in_quotes(path));
            }
            return contents;
        }
    }
    std::ostringstream contents;  // pipes and other streams of unknown size
    contents << file.rdbuf();
    if (file.bad()) throw PolygraphyException("Could not read file: " + in_quotes(path));
    return std::move(contents).str();
}

std::string BytesFromPath::operator()() const {
    return bytes_from_path(path_);
}

OnnxModel onnx_from_bytes(const std::string& bytes) {
    return parse_model(bytes, "The provided data");
}

OnnxModel OnnxFromBytes::operator()() const {
    return onnx_from_bytes(bytes_());
}

OnnxModel onnx_from_path(const std::string& path, std::optional<std::string> external_data_dir,
                         bool ignore_external_data) {
    logger().info("Loading model: " + path);
    std::error_code error;
    if (!fs::exists(path, error)) throw PolygraphyException("Model file does not exist: " + in_quotes(path));
    if (fs::is_directory(path, error))
        throw PolygraphyException("Expected a file, but got a directory: " + in_quotes(path));
    // Parsed straight from the mapped file: no copy of a (possibly huge) file in anonymous memory.
    OnnxModel model;
    {
        MappedFile file(path);
        model = parse_model(file.view(), in_quotes(path));
    }
    if (!ignore_external_data) {
        fs::path folder = external_data_dir ? fs::path(*external_data_dir) : fs::path(path).parent_path();
        if (folder.empty()) folder = ".";
        load_external_data(*model, folder);
    }
    return model;
}

OnnxModel OnnxFromPath::operator()() const {
    return onnx_from_path(path_, external_data_dir_, ignore_external_data_);
}

// ---- outputs ------------------------------------------------------------------------------------

OnnxModel modify_outputs(OnnxModel model, const std::vector<std::string>& outputs,
                         const std::vector<std::string>& exclude_outputs) {
    if (!model) throw PolygraphyException("Cannot modify outputs: the model is null");
    onnx::GraphProto& graph = *model->mutable_graph();
    const std::vector<std::string> known = all_tensor_names(graph);

    std::vector<std::string> selected;
    bool replace = false;
    if (outputs == kMarkAll) {
        logger().verbose("Marking all ONNX tensors as outputs");
        replace = true;
        for (const auto& node : graph.node()) {
            if (node.op_type() == "Constant") continue;
            for (const auto& output : node.output()) {
                if (!output.empty()) selected.push_back(output);
            }
        }
    } else if (!outputs.empty()) {
        replace = true;
        check_tensors_exist(outputs, known, "marked as an output");
        selected = outputs;
    }

    if (replace) {
        std::vector<onnx::ValueInfoProto> infos;
        std::unordered_set<std::string> seen;
        for (const auto& name : selected) {
            if (seen.insert(name).second) infos.push_back(typed_value_info(graph, name));
        }
        graph.clear_output();
        for (auto& info : infos) *graph.add_output() = std::move(info);
    }

    if (!exclude_outputs.empty()) {
        check_tensors_exist(exclude_outputs, known, "excluded from the outputs");
        const std::unordered_set<std::string> excluded(exclude_outputs.begin(), exclude_outputs.end());
        auto* list = graph.mutable_output();
        for (int i = list->size() - 1; i >= 0; --i) {
            if (excluded.count(list->Get(i).name())) list->DeleteSubrange(i, 1);
        }
    }

    std::vector<std::string> names;
    for (const auto& output : graph.output()) names.push_back(output.name());
    logger().extra_verbose("Marked output tensors in ONNX model: [" + join_names(names) + "]");
    return model;
}

OnnxModel ModifyOutputs::operator()() const {
    return modify_outputs(model_(), outputs_, exclude_outputs_);
}

// ---- saving -------------------------------------------------------------------------------------

std::string bytes_from_onnx(const onnx::ModelProto& model) {
    const std::size_t size = model.ByteSizeLong();
    if (size > kProtobufLimit) {
        throw PolygraphyException("Cannot serialize the model: it is " + std::to_string(size) +
                                  " bytes, over protobuf's 2 GiB limit" +
                                  "\nNote: Models this large must keep their weights in external data files");
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes)) throw PolygraphyException("Failed to serialize the ONNX model");
    return bytes;
}

std::string BytesFromOnnx::operator()() const {
    const OnnxModel model = model_();
    if (!model) throw PolygraphyException("BytesFromOnnx: the model loader returned no model");
    return bytes_from_onnx(*model);
}

void save_onnx(const onnx::ModelProto& model, const std::string& path) {
    logger().info("Saving ONNX model to: " + path);
    const std::size_t size = model.ByteSizeLong();
    if (size > kProtobufLimit) (void)bytes_from_onnx(model);  // throws the size error
    // Serialized straight into the (buffered) file: no second copy of the model in memory.
    class FileStream : public google::protobuf::io::CopyingOutputStream {
    public:
        explicit FileStream(std::FILE* out) : out_(out) {}
        bool Write(const void* buffer, int size) override {
            return std::fwrite(buffer, 1, static_cast<std::size_t>(size), out_) == static_cast<std::size_t>(size);
        }

    private:
        std::FILE* out_;
    };
    write_file_atomically(path, [&](std::FILE* out) {
        FileStream file(out);
        google::protobuf::io::CopyingOutputStreamAdaptor stream(&file, 1 << 20);
        bool ok = true;
        {
            google::protobuf::io::CodedOutputStream coded(&stream);
            model.SerializeWithCachedSizes(&coded);
            ok = !coded.HadError();
        }
        if (!ok || !stream.Flush()) throw PolygraphyException("Failed to serialize the ONNX model");
    });
}

OnnxModel SaveOnnx::operator()() const {
    OnnxModel model = model_();
    if (!model) throw PolygraphyException("Cannot save model to " + in_quotes(path_) + ": the model is null");
    save_onnx(*model, path_);
    return model;
}

// ---- metadata -----------------------------------------------------------------------------------

TensorMetadata get_onnx_input_metadata(const onnx::GraphProto& graph) {
    std::unordered_set<std::string> initializers;
    for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
    TensorMetadata metadata;
    for (const auto& input : graph.input()) {
        if (initializers.count(input.name())) continue;
        metadata.set(input.name(), metadata_from_value_info(input));
    }
    return metadata;
}

TensorMetadata get_onnx_output_metadata(const onnx::GraphProto& graph) {
    TensorMetadata metadata;
    for (const auto& output : graph.output()) metadata.set(output.name(), metadata_from_value_info(output));
    return metadata;
}

int64_t get_onnx_opset(const onnx::ModelProto& model, const std::string& domain) {
    auto is_default = [](const std::string& name) { return name.empty() || name == "ai.onnx"; };
    for (const auto& opset : model.opset_import()) {
        if (opset.domain() == domain || (is_default(domain) && is_default(opset.domain()))) return opset.version();
    }
    return 1;
}

}  // namespace polygraphy
