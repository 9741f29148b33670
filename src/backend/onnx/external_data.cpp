// External data: loading the tensors a model keeps in other files, and saving large tensors to
// one (see loader.h and graph.h).
#include "backend/onnx/external_data.h"
#include "backend/onnx/protobuf.h"
#include "backend/onnx/structure_unlogged.h"

#include <charconv>
#include <deque>
#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"

namespace polygraphy {
namespace fs = std::filesystem;
namespace {

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

}  // namespace

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

void save_onnx_with_external_data(const onnx::ModelProto& model, const std::string& path,
                                  const ExternalDataOptions& options) {
    const fs::path model_path(path);
    std::string location = options.location.empty() ? model_path.filename().string() + ".data" : options.location;
    const fs::path location_path(location);
    if (location_path.is_absolute() || location_path.lexically_normal().string().starts_with(".."))
        throw PolygraphyException(
            fmt::format("External data path '{}' must be relative to the model's folder and stay inside it", location));
    const fs::path data_path = model_path.parent_path() / location_path;

    // The copy leaves out the top-level initializers: large ones are written to the data file
    // straight from `model`, so a multi-GB model is not held twice in memory.
    onnx::ModelProto copy;
    copy.set_ir_version(model.ir_version());
    *copy.mutable_opset_import() = model.opset_import();
    copy.set_producer_name(model.producer_name());
    copy.set_producer_version(model.producer_version());
    copy.set_domain(model.domain());
    copy.set_model_version(model.model_version());
    copy.set_doc_string(model.doc_string());
    *copy.mutable_metadata_props() = model.metadata_props();
    *copy.mutable_training_info() = model.training_info();
    *copy.mutable_functions() = model.functions();
    const onnx::GraphProto& graph = model.graph();
    onnx::GraphProto& target = *copy.mutable_graph();
    target.set_name(graph.name());
    target.set_doc_string(graph.doc_string());
    *target.mutable_node() = graph.node();
    *target.mutable_input() = graph.input();
    *target.mutable_output() = graph.output();
    *target.mutable_value_info() = graph.value_info();
    *target.mutable_sparse_initializer() = graph.sparse_initializer();
    *target.mutable_quantization_annotation() = graph.quantization_annotation();

    std::vector<std::string_view> chunks;  // in file order
    std::deque<std::string> owned;         // data converted from typed fields or moved out of the copy
    uint64_t offset = 0;
    auto point_to_file = [&](onnx::TensorProto& tensor, std::string_view data) {
        tensor.clear_raw_data();
        tensor.set_data_location(onnx::TensorProto::EXTERNAL);
        tensor.clear_external_data();
        auto add = [&](const std::string& key, const std::string& value) {
            auto* entry = tensor.add_external_data();
            entry->set_key(key);
            entry->set_value(value);
        };
        add("location", location);
        add("offset", std::to_string(offset));
        add("length", std::to_string(data.size()));
        offset += data.size();
        chunks.push_back(data);
    };
    auto externalize = [&](onnx::TensorProto& tensor) {
        if (tensor.data_location() == onnx::TensorProto::EXTERNAL) return;
        if (tensor.data_type() == onnx::TensorProto::STRING) return;
        if (!tensor.has_raw_data()) {
            Tensor value = tensor_from_proto(tensor);
            if (value.nbytes() < options.size_threshold || value.nbytes() == 0) return;
            onnx::TensorProto raw = tensor_to_proto(value, tensor.name());
            tensor.clear_float_data();
            tensor.clear_int32_data();
            tensor.clear_int64_data();
            tensor.clear_double_data();
            tensor.clear_uint64_data();
            tensor.set_raw_data(std::move(*raw.mutable_raw_data()));
        }
        if (tensor.raw_data().size() < options.size_threshold || tensor.raw_data().empty()) return;
        owned.emplace_back();
        owned.back().swap(*tensor.mutable_raw_data());
        point_to_file(tensor, owned.back());
    };
    for (const auto& initializer : graph.initializer()) {
        const bool large_raw = initializer.data_location() != onnx::TensorProto::EXTERNAL &&
                               initializer.data_type() != onnx::TensorProto::STRING && initializer.has_raw_data() &&
                               !initializer.raw_data().empty() &&
                               initializer.raw_data().size() >= options.size_threshold;
        onnx::TensorProto& tensor = *target.add_initializer();
        if (!large_raw) {
            tensor = initializer;
            externalize(tensor);
            continue;
        }
        tensor.set_name(initializer.name());
        tensor.set_data_type(initializer.data_type());
        *tensor.mutable_dims() = initializer.dims();
        tensor.set_doc_string(initializer.doc_string());
        point_to_file(tensor, initializer.raw_data());
    }
    std::function<void(onnx::GraphProto&, bool)> visit_graph = [&](onnx::GraphProto& body, bool top_level) {
        if (!top_level)
            for (auto& tensor : *body.mutable_initializer()) externalize(tensor);
        for (auto& node : *body.mutable_node()) {
            for (auto& attribute : *node.mutable_attribute()) {
                if (attribute.has_t()) externalize(*attribute.mutable_t());
                for (auto& tensor : *attribute.mutable_tensors()) externalize(tensor);
                if (attribute.has_g()) visit_graph(*attribute.mutable_g(), false);
                for (auto& nested : *attribute.mutable_graphs()) visit_graph(nested, false);
            }
        }
    };
    visit_graph(target, true);

    const std::string bytes = bytes_from_onnx(copy);  // checks the size before anything is written
    logger().info(fmt::format("Saving ONNX model to: {}", path));
    logger().verbose(fmt::format("Writing {} tensor(s) ({} bytes) to external data file: {}", chunks.size(), offset,
                                 data_path.string()));
    write_file_atomically(data_path.string(), [&](std::FILE* out) {
        for (const auto& chunk : chunks)
            if (!chunk.empty() && std::fwrite(chunk.data(), 1, chunk.size(), out) != chunk.size())
                throw PolygraphyException(fmt::format("Failed to write external data to '{}'", data_path.string()));
    });
    write_file_atomically(path, bytes);
}

}  // namespace polygraphy
