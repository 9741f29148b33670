// ONNX loaders: reading, parsing, re-marking outputs, saving (external data: external_data.cpp).
#include "polygraphy/backend/onnx/loader.h"

#include "backend/onnx/domain.h"
#include "backend/onnx/external_data.h"
#include "backend/onnx/protobuf.h"
#include "backend/onnx/unchecked_load.h"
#include "polygraphy/backend/onnx/functions.h"
#include "polygraphy/backend/onnx/node_check.h"

#include <atomic>
#include <climits>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/name_match.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy {
namespace fs = std::filesystem;

void route_protobuf_logs() {
    static std::once_flag once;
    std::call_once(once, [] {
        google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string& message) {
            logger().verbose("protobuf: " + message);
        });
    });
}

namespace {

OnnxModel parse_model(std::string_view bytes, const std::string& what, bool check = true) {
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
    if (check) check_nodes(*model);  // before any pass reads a node by position
    return model;
}

// ---- outputs ------------------------------------------------------------------------------------

std::string join_names(const std::vector<std::string>& names) {
    std::string joined;
    for (const auto& name : names) joined += (joined.empty() ? "" : ", ") + name;
    return joined;
}

void check_tensors_exist(const std::vector<std::string>& requested, const std::vector<std::string>& known,
                         const std::string& what) {
    const std::unordered_set<std::string> known_set(known.begin(), known.end());
    for (const auto& name : requested) {
        if (known_set.count(name)) continue;
        std::string message =
            "Tensor " + python_repr(name) + " does not exist in the model, so it cannot be " + what + ".";
        if (auto match = closest_match(name, known)) message += " Did you mean " + python_repr(*match) + "?";
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
    if (!fs::exists(path, error)) throw PolygraphyException("File does not exist: " + python_repr(path));
    if (fs::is_directory(path, error))
        throw PolygraphyException("Expected a file, but got a directory: " + python_repr(path));
    std::ifstream file(path, std::ios::binary);
    if (!file) throw PolygraphyException("Could not open file: " + python_repr(path));
    if (fs::is_regular_file(path, error)) {
        // One allocation and one read for (possibly large) model files.
        const auto size = fs::file_size(path, error);
        if (!error) {
            std::string contents(static_cast<std::size_t>(size), '\0');
            file.read(contents.data(), static_cast<std::streamsize>(size));
            if (static_cast<uintmax_t>(file.gcount()) != size) {
                throw PolygraphyException("Could not read file: " + python_repr(path));
            }
            return contents;
        }
    }
    std::ostringstream contents;  // pipes and other streams of unknown size
    contents << file.rdbuf();
    if (file.bad()) throw PolygraphyException("Could not read file: " + python_repr(path));
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

namespace {

OnnxModel load_model_file(const std::string& path, const std::optional<std::string>& external_data_dir,
                          bool ignore_external_data, bool check) {
    logger().info("Loading model: " + path);
    std::error_code error;
    if (!fs::exists(path, error)) throw PolygraphyException("Model file does not exist: " + python_repr(path));
    if (fs::is_directory(path, error))
        throw PolygraphyException("Expected a file, but got a directory: " + python_repr(path));
    // Parsed straight from the mapped file: no copy of a (possibly huge) file in anonymous memory.
    OnnxModel model;
    {
        MappedFile file(path);
        model = parse_model(file.view(), python_repr(path), check);
    }
    remove_checked_marks(*model);  // only the checks below may mark a reference as checked
    if (!ignore_external_data) check_external_data(*model, external_data_folder(path, external_data_dir));
    return model;
}

}  // namespace

OnnxModel onnx_from_path(const std::string& path, std::optional<std::string> external_data_dir,
                         bool ignore_external_data) {
    return load_model_file(path, external_data_dir, ignore_external_data, true);
}

OnnxModel onnx_from_path_unchecked(const std::string& path, const std::optional<std::string>& external_data_dir,
                                   bool ignore_external_data) {
    return load_model_file(path, external_data_dir, ignore_external_data, false);
}

OnnxModel OnnxFromPath::operator()() const {
    return onnx_from_path(path_, external_data_dir_, ignore_external_data_);
}

// ---- outputs ------------------------------------------------------------------------------------

OnnxModel modify_outputs(OnnxModel model, const std::vector<std::string>& outputs,
                         const std::vector<std::string>& exclude_outputs) {
    if (!model) throw PolygraphyException("Cannot modify outputs: the model is null");
    // The tensors inside local functions become graph tensors that can be marked (functions.h names them).
    if ((!outputs.empty() || !exclude_outputs.empty()) && calls_local_functions(*model)) {
        logger().verbose("Inlining local functions so that the tensors inside them can be marked as outputs");
        inline_local_functions(*model);
    }
    onnx::GraphProto& graph = *model->mutable_graph();
    const std::vector<std::string> known = onnx_tensor_names(graph);

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

namespace {

constexpr const char* kSizeLimitVariable = "POLYGRAPHY_ONNX_SIZE_LIMIT";
std::atomic<std::size_t> g_size_limit{0};  // 0: not set

// Serializes `model` straight into the (buffered) file: no second copy of the model in memory.
void write_model(const onnx::ModelProto& model, const std::string& path) {
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
        (void)model.ByteSizeLong();  // SerializeWithCachedSizes() needs this model's sizes cached
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

}  // namespace

std::size_t onnx_size_limit() {
    if (const std::size_t set = g_size_limit.load()) return set;
    return static_cast<std::size_t>(
        byte_count_from_environment(kSizeLimitVariable, kProtobufLimit).value_or(kProtobufLimit));
}

void set_onnx_size_limit(std::size_t bytes) {
    if (bytes > kProtobufLimit)
        throw PolygraphyException("The ONNX size limit cannot exceed protobuf's " + std::to_string(kProtobufLimit) +
                                  " bytes, not " + std::to_string(bytes));
    g_size_limit.store(bytes);
}

uint64_t onnx_serialized_size(const onnx::ModelProto& model) {
    return model.ByteSizeLong() + checked_external_bytes(model);
}

std::string bytes_from_onnx(const onnx::ModelProto& model) {
    const uint64_t size = onnx_serialized_size(model);
    if (size > onnx_size_limit()) {
        throw PolygraphyException("Cannot serialize the model: it is " + std::to_string(size) + " bytes, over the " +
                                  std::to_string(onnx_size_limit()) + " bytes protobuf allows" +
                                  "\nNote: Models this large must keep their weights in external data files");
    }
    std::string bytes;
    bool ok = false;
    if (checked_external_bytes(model) > 0) {
        onnx::ModelProto copy = model;
        load_checked_external_data(copy);
        ok = copy.SerializeToString(&bytes);
    } else {
        ok = model.SerializeToString(&bytes);
    }
    if (!ok) throw PolygraphyException("Failed to serialize the ONNX model");
    return bytes;
}

std::string BytesFromOnnx::operator()() const {
    const OnnxModel model = model_();
    if (!model) throw PolygraphyException("BytesFromOnnx: the model loader returned no model");
    return bytes_from_onnx(*model);
}

void save_onnx(const onnx::ModelProto& model, const std::string& path) {
    const uint64_t size = onnx_serialized_size(model);
    if (size > onnx_size_limit()) {
        logger().warning("The model is " + std::to_string(size) + " bytes, more than one ONNX file holds (" +
                         std::to_string(onnx_size_limit()) + "): saving its weights to the external data file " +
                         python_repr(fs::path(path).filename().string() + ".data"));
        save_onnx_with_external_data(model, path);
        return;
    }
    logger().info("Saving ONNX model to: " + path);
    if (checked_external_bytes(model) == 0) {
        write_model(model, path);
        return;
    }
    onnx::ModelProto copy = model;  // self-contained: the weights of checked references are read in
    load_checked_external_data(copy);
    write_model(copy, path);
}

OnnxModel SaveOnnx::operator()() const {
    OnnxModel model = model_();
    if (!model) throw PolygraphyException("Cannot save model to " + python_repr(path_) + ": the model is null");
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
    return opset_of_domain(model, domain);
}

}  // namespace polygraphy
