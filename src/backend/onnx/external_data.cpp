// External data: checking the references of a loaded model, reading (mapping) the bytes of checked
// references, and saving large tensors to one file (see external_data.h, loader.h and graph.h).
#include "backend/onnx/external_data.h"
#include "backend/onnx/protobuf.h"
#include "backend/onnx/structure_unlogged.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/backend/onnx/tensor_proto.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy {
namespace fs = std::filesystem;
namespace {

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
        throw FormatError("Tensor " + python_repr(tensor.name()) + " has an invalid external data " + key + ": " +
                          python_repr(value) + " (expected a non-negative integer)");
    }
    return number;
}

// Bytes the tensor's dims and dtype call for; FormatError for dtypes that cannot be stored externally.
uint64_t expected_external_bytes(const onnx::TensorProto& tensor) {
    const DataType dtype = dtype_from_onnx(tensor.data_type());
    if (dtype == DataType::kUndefined || dtype == DataType::kString) {
        throw FormatError("Tensor " + python_repr(tensor.name()) + " has external data but data type " +
                          std::to_string(tensor.data_type()) + ", which cannot be stored externally");
    }
    constexpr uint64_t kMax = uint64_t{1} << 58;
    uint64_t numel = 1;
    for (int64_t dim : tensor.dims()) {
        if (dim < 0 || (dim != 0 && numel > kMax / static_cast<uint64_t>(dim))) {
            throw FormatError("Tensor " + python_repr(tensor.name()) + " has invalid dimensions");
        }
        numel *= static_cast<uint64_t>(dim);
    }
    if (dtype == DataType::kInt4 || dtype == DataType::kUInt4) return numel / 2 + numel % 2;
    return numel * dtype_size(dtype);
}

bool is_polygraphy_key(const std::string& key) {
    return key.starts_with("polygraphy.");
}

// The file a checked reference names, checked again: inside its folder and a regular file.
fs::path resolve_inside(const std::string& label, const fs::path& folder, const std::string& location) {
    const fs::path relative(location);
    if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory()) {
        throw PolygraphyException(label + " has an absolute external data location: " + python_repr(location) +
                                  "\nNote: External data must be given relative to the model's folder");
    }
    const fs::path normal = relative.lexically_normal();
    if (!normal.empty() && *normal.begin() == "..") {
        throw PolygraphyException(
            label + " has an external data location that leaves the external data folder: " + python_repr(location));
    }
    std::error_code error;
    const fs::path resolved = fs::canonical(folder / relative, error);
    if (error) {
        throw PolygraphyException(label + ": external data file " + python_repr(location) + " was not found in " +
                                  python_repr(folder.string()) + " (" + error.message() + ")");
    }
    if (!is_within(resolved, folder)) {
        throw PolygraphyException(label + ": external data location " + python_repr(location) + " resolves to " +
                                  python_repr(resolved.string()) + ", outside the external data folder " +
                                  python_repr(folder.string()));
    }
    if (!fs::is_regular_file(resolved, error)) {
        throw PolygraphyException(label + ": external data location " + python_repr(location) +
                                  " is not a regular file");
    }
    return resolved;
}

// Checks that [start, start + length) lies in a file of `file_size` bytes.
void check_range(const std::string& label, const std::string& location, uint64_t start, uint64_t length,
                 uint64_t file_size) {
    if (start > file_size) {
        throw FormatError(label + ": external data offset " + std::to_string(start) + " is past the end of " +
                          python_repr(location) + " (" + std::to_string(file_size) + " bytes)");
    }
    if (length > file_size - start) {
        throw FormatError(label + ": external data of " + std::to_string(length) + " bytes at offset " +
                          std::to_string(start) + " runs past the end of " + python_repr(location) + " (" +
                          std::to_string(file_size) + " bytes)");
    }
}

void set_entry(onnx::TensorProto& tensor, const std::string& key, const std::string& value) {
    auto* entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
}

class ExternalDataChecker {
public:
    explicit ExternalDataChecker(fs::path folder) : folder_(std::move(folder)) {}

    void check(onnx::TensorProto& tensor) {
        const std::string label = "Tensor " + python_repr(tensor.name());
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

        const fs::path& base = base_folder();
        const fs::path resolved = resolve_inside(label, base, location);
        std::error_code error;
        const uint64_t file_size = fs::file_size(resolved, error);
        if (error) throw PolygraphyException(label + ": cannot read external data file " + python_repr(location));

        const uint64_t start = offset.value_or(0);
        if (start > file_size) check_range(label, location, start, 0, file_size);
        const uint64_t expected = expected_external_bytes(tensor);
        if (length && *length != expected) {
            throw FormatError(label + ": external data length " + std::to_string(*length) +
                              " disagrees with its shape and dtype, which need " + std::to_string(expected) + " bytes");
        }
        check_range(label, location, start, expected, file_size);

        tensor.clear_external_data();
        set_entry(tensor, "location", location);
        set_entry(tensor, "offset", std::to_string(start));
        set_entry(tensor, "length", std::to_string(expected));
        set_entry(tensor, kCheckedFolderKey, base.string());
        ++checked_;
        bytes_ += expected;
    }

    std::size_t checked() const { return checked_; }
    uint64_t bytes() const { return bytes_; }

private:
    // Canonical form of the folder, resolved on first use so that models without external data never need it.
    const fs::path& base_folder() {
        if (!base_) {
            std::error_code error;
            fs::path canonical = fs::canonical(folder_, error);
            if (error || !fs::is_directory(canonical)) {
                throw PolygraphyException("External data folder does not exist: " + python_repr(folder_.string()));
            }
            logger().verbose("Loading external data from: " + canonical.string());
            base_ = std::move(canonical);
        }
        return *base_;
    }

    fs::path folder_;
    std::optional<fs::path> base_;
    std::size_t checked_ = 0;
    uint64_t bytes_ = 0;
};

// An open file descriptor, closed on scope exit.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    ~FileDescriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

// The checked reference's file, opened after checking again where it is and how long it is (the
// file may have changed since the model was loaded).
struct OpenedReference {
    ExternalReference reference;
    std::string label;
    std::unique_ptr<FileDescriptor> file;
};

OpenedReference open_reference(const onnx::TensorProto& tensor) {
    OpenedReference opened{checked_reference(tensor), "Tensor " + python_repr(tensor.name()), nullptr};
    const ExternalReference& reference = opened.reference;
    const fs::path path = resolve_inside(opened.label, reference.folder, reference.location);
    opened.file = std::make_unique<FileDescriptor>(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat info {};
    if (opened.file->get() < 0 || fstat(opened.file->get(), &info) != 0)
        throw PolygraphyException(opened.label + ": cannot read external data file " + python_repr(reference.location) +
                                  " (" + std::strerror(errno) + ")");
    check_range(opened.label, reference.location, reference.offset, reference.length,
                static_cast<uint64_t>(info.st_size));
    return opened;
}

// Reads exactly `size` bytes at `offset`; PolygraphyException when the file ends first.
void read_at(const OpenedReference& opened, uint64_t offset, char* out, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::pread(opened.file->get(), out, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw PolygraphyException(opened.label + ": failed to read external data from " +
                                      python_repr(opened.reference.location));
        out += n;
        offset += static_cast<uint64_t>(n);
        size -= static_cast<std::size_t>(n);
    }
}

void visit_graph_tensors(onnx::GraphProto& graph, const std::function<void(onnx::TensorProto&)>& visit);

void visit_node_tensors(onnx::NodeProto& node, const std::function<void(onnx::TensorProto&)>& visit) {
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
        if (attribute.has_g()) visit_graph_tensors(*attribute.mutable_g(), visit);
        for (auto& subgraph : *attribute.mutable_graphs()) visit_graph_tensors(subgraph, visit);
    }
}

void visit_graph_tensors(onnx::GraphProto& graph, const std::function<void(onnx::TensorProto&)>& visit) {
    for (auto& tensor : *graph.mutable_initializer()) visit(tensor);
    for (auto& sparse : *graph.mutable_sparse_initializer()) {
        visit(*sparse.mutable_values());
        visit(*sparse.mutable_indices());
    }
    for (auto& node : *graph.mutable_node()) visit_node_tensors(node, visit);
}

// The weights of checked references are read while the data file is written; replacing their own
// file would also leave the model in memory reading the new file at the old offsets.
void refuse_overwriting_sources(const onnx::ModelProto& model, const fs::path& data_path) {
    std::error_code error;
    const fs::path target = fs::weakly_canonical(data_path, error);
    if (error) return;
    for_each_tensor(model, [&](const onnx::TensorProto& tensor) {
        if (!is_checked_external(tensor)) return;
        const ExternalReference reference = checked_reference(tensor);
        std::error_code ignored;
        if (fs::weakly_canonical(reference.folder / reference.location, ignored) == target)
            throw PolygraphyException("Cannot save external data to " + python_repr(data_path.string()) +
                                      ": the model reads its weights from that file" +
                                      "\nNote: Save to another file name or folder");
    });
}

}  // namespace

void for_each_tensor(onnx::ModelProto& model, const std::function<void(onnx::TensorProto&)>& visit) {
    visit_graph_tensors(*model.mutable_graph(), visit);
    for (auto& function : *model.mutable_functions())
        for (auto& node : *function.mutable_node()) visit_node_tensors(node, visit);
}

void for_each_tensor(const onnx::ModelProto& model, const std::function<void(const onnx::TensorProto&)>& visit) {
    // The traversal only calls mutable_*() for sub-messages that are present, which returns them
    // unchanged: the model is not modified.
    for_each_tensor(const_cast<onnx::ModelProto&>(model), [&visit](onnx::TensorProto& tensor) { visit(tensor); });
}

void check_external_data(onnx::ModelProto& model, const fs::path& folder) {
    ExternalDataChecker checker(folder);
    for_each_tensor(model, [&checker](onnx::TensorProto& tensor) {
        if (tensor.data_location() == onnx::TensorProto::EXTERNAL) checker.check(tensor);
    });
    if (checker.checked() > 0)
        logger().verbose(
            fmt::format("Checked the external data of {} tensor(s) ({} bytes); it stays in its files and "
                        "is mapped when read",
                        checker.checked(), checker.bytes()));
}

void remove_checked_marks(onnx::ModelProto& model) {
    for_each_tensor(model, [](onnx::TensorProto& tensor) {
        auto* entries = tensor.mutable_external_data();
        for (int i = entries->size() - 1; i >= 0; --i)
            if (is_polygraphy_key(entries->Get(i).key())) entries->DeleteSubrange(i, 1);
    });
}

bool is_checked_external(const onnx::TensorProto& tensor) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL) return false;
    for (const auto& entry : tensor.external_data())
        if (entry.key() == kCheckedFolderKey) return true;
    return false;
}

ExternalReference checked_reference(const onnx::TensorProto& tensor) {
    ExternalReference reference;
    bool checked = false;
    for (const auto& entry : tensor.external_data()) {
        if (entry.key() == "location") reference.location = entry.value();
        if (entry.key() == "offset") reference.offset = parse_external_number(tensor, "offset", entry.value());
        if (entry.key() == "length") reference.length = parse_external_number(tensor, "length", entry.value());
        if (entry.key() == kCheckedFolderKey) {
            reference.folder = entry.value();
            checked = true;
        }
    }
    if (!checked || tensor.data_location() != onnx::TensorProto::EXTERNAL)
        throw InternalError("Tensor " + python_repr(tensor.name()) + " is not a checked external data reference");
    return reference;
}

ExternalBytes read_external_bytes(const onnx::TensorProto& tensor) {
    // Small tensors are read: a mapping costs a page and a system call each.
    constexpr uint64_t kMapMinBytes = 64 << 10;
    const OpenedReference opened = open_reference(tensor);
    const uint64_t offset = opened.reference.offset;
    const uint64_t length = opened.reference.length;
    if (length < kMapMinBytes) {
        auto copy = std::make_shared<std::string>(static_cast<std::size_t>(length), '\0');
        read_at(opened, offset, copy->data(), copy->size());
        const std::string_view bytes(*copy);
        return {std::move(copy), bytes};
    }
    static const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t start = offset / page * page;
    const auto size = static_cast<std::size_t>(offset - start + length);
    void* mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, opened.file->get(), static_cast<off_t>(start));
    if (mapping == MAP_FAILED)
        throw PolygraphyException(opened.label + ": cannot map external data file " +
                                  python_repr(opened.reference.location) + " (" + std::strerror(errno) + ")");
    std::shared_ptr<const void> owner(mapping, [size](const void* base) { munmap(const_cast<void*>(base), size); });
    const std::string_view bytes(static_cast<const char*>(mapping) + (offset - start),
                                 static_cast<std::size_t>(length));
    return {std::move(owner), bytes};
}

void copy_external_bytes(const onnx::TensorProto& tensor, const std::function<void(std::string_view)>& sink) {
    constexpr std::size_t kChunk = 1 << 20;
    const OpenedReference opened = open_reference(tensor);
    std::string buffer(static_cast<std::size_t>(std::min<uint64_t>(kChunk, opened.reference.length)), '\0');
    for (uint64_t done = 0; done < opened.reference.length;) {
        const auto size = static_cast<std::size_t>(std::min<uint64_t>(kChunk, opened.reference.length - done));
        read_at(opened, opened.reference.offset + done, buffer.data(), size);
        sink(std::string_view(buffer.data(), size));
        done += size;
    }
}

uint64_t checked_external_bytes(const onnx::ModelProto& model) {
    uint64_t bytes = 0;
    for_each_tensor(model, [&bytes](const onnx::TensorProto& tensor) {
        if (is_checked_external(tensor)) bytes += checked_reference(tensor).length;
    });
    return bytes;
}

void load_checked_external_data(onnx::ModelProto& model) {
    for_each_tensor(model, [](onnx::TensorProto& tensor) {
        if (!is_checked_external(tensor)) return;
        std::string data;
        data.reserve(static_cast<std::size_t>(checked_reference(tensor).length));
        copy_external_bytes(tensor, [&data](std::string_view chunk) { data.append(chunk); });
        tensor.set_raw_data(std::move(data));
        tensor.clear_external_data();
        tensor.clear_data_location();
    });
}

onnx::ModelProto copy_without_initializers(const onnx::ModelProto& model) {
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
    return copy;
}

onnx::ModelProto checker_copy(const onnx::ModelProto& model) {
    onnx::ModelProto copy = copy_without_initializers(model);
    std::set<std::string> inputs;
    for (const auto& input : model.graph().input()) inputs.insert(input.name());
    for (const auto& initializer : model.graph().initializer()) {
        if (!is_checked_external(initializer)) {
            *copy.mutable_graph()->add_initializer() = initializer;
            continue;
        }
        if (inputs.contains(initializer.name())) continue;  // an input with a default value already
        onnx::ValueInfoProto& input = *copy.mutable_graph()->add_input();
        input.set_name(initializer.name());
        auto& type = *input.mutable_type()->mutable_tensor_type();
        type.set_elem_type(initializer.data_type());
        for (int64_t dim : initializer.dims()) type.mutable_shape()->add_dim()->set_dim_value(dim);
    }
    load_checked_external_data(copy);
    return copy;
}

WeightlessCopy weightless_copy(const onnx::ModelProto& model, std::size_t min_bytes) {
    WeightlessCopy result{copy_without_initializers(model), std::nullopt, {}, {}};
    // A checked reference stays a reference for the runtime: without polygraphy's key, its location
    // relative to the one folder the runtime reads files from.
    auto keep_reference = [&result](onnx::TensorProto& tensor) -> bool {
        const ExternalReference reference = checked_reference(tensor);
        if (!result.folder) result.folder = reference.folder;
        if (*result.folder != reference.folder) return false;
        auto* entries = tensor.mutable_external_data();
        for (int i = entries->size() - 1; i >= 0; --i)
            if (is_polygraphy_key(entries->Get(i).key())) entries->DeleteSubrange(i, 1);
        return true;
    };
    auto metadata_of = [](const onnx::TensorProto& tensor) {
        onnx::TensorProto light;
        light.set_name(tensor.name());
        light.set_data_type(tensor.data_type());
        *light.mutable_dims() = tensor.dims();
        light.set_data_location(onnx::TensorProto::EXTERNAL);
        return light;
    };
    for (const auto& initializer : model.graph().initializer()) {
        onnx::TensorProto& tensor = *result.model.mutable_graph()->add_initializer();
        const bool in_memory = initializer.data_location() != onnx::TensorProto::EXTERNAL &&
                               initializer.has_raw_data() && initializer.raw_data().size() >= min_bytes &&
                               initializer.data_type() != onnx::TensorProto::STRING;
        tensor = in_memory ? metadata_of(initializer) : initializer;
        if (in_memory) {
            set_entry(tensor, "location", kInMemoryLocation);
            set_entry(tensor, "length", std::to_string(initializer.raw_data().size()));
            result.in_memory.push_back(&initializer);
        } else if (is_checked_external(initializer) && !keep_reference(tensor)) {
            tensor = metadata_of(initializer);
            set_entry(tensor, "location", kInMemoryLocation);
            set_entry(tensor, "length", std::to_string(checked_reference(initializer).length));
            result.elsewhere.push_back(&initializer);
        }
    }
    // Tensors of subgraphs and attributes are left in place; their references lose polygraphy's key.
    for_each_tensor(result.model, [&](onnx::TensorProto& tensor) {
        if (is_checked_external(tensor) && !keep_reference(tensor))
            throw UnsupportedError("Tensor " + python_repr(tensor.name()) +
                                   " is not an initializer and its external data lies in another folder than the "
                                   "model's other weights");
    });
    return result;
}

bool onnx_file_may_use_external_data(const std::string& path) {
    OnnxModel structure;
    try {
        structure = onnx_structure_from_path_unlogged(path);  // tensor values skipped unread; a probe, not a load
    } catch (const FormatError&) {
        return true;  // the full loader gives the real error
    }
    bool external = false;
    for_each_tensor(*structure, [&external](const onnx::TensorProto& tensor) {
        if (tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.external_data_size() > 0) external = true;
    });
    return external;
}

bool check_onnx_file_external_data(const std::string& path, const std::optional<std::string>& external_data_dir) {
    const OnnxModel structure = onnx_structure_from_path_unlogged(path);  // values skipped; a probe
    remove_checked_marks(*structure);
    bool external = false;
    for_each_tensor(*structure, [&external](const onnx::TensorProto& tensor) {
        external = external || tensor.data_location() == onnx::TensorProto::EXTERNAL;
    });
    if (external) check_external_data(*structure, external_data_folder(path, external_data_dir));
    return external;
}

fs::path external_data_folder(const std::string& model_path, const std::optional<std::string>& external_data_dir) {
    fs::path folder = external_data_dir ? fs::path(*external_data_dir) : fs::path(model_path).parent_path();
    return folder.empty() ? fs::path(".") : folder;
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
    refuse_overwriting_sources(model, data_path);

    // The copy leaves out the top-level initializers: large ones are written to the data file
    // straight from `model` (or from the files their data is in), so a multi-GB model is not held
    // twice in memory.
    onnx::ModelProto copy = copy_without_initializers(model);
    const onnx::GraphProto& graph = model.graph();
    onnx::GraphProto& target = *copy.mutable_graph();

    // One tensor's bytes in the data file: in memory, or in the file a checked reference names.
    struct Chunk {
        uint64_t offset = 0;
        std::string_view memory;
        const onnx::TensorProto* reference = nullptr;
    };
    constexpr uint64_t kAlignment = 64;        // so that every tensor can be mapped with its elements aligned
    std::vector<Chunk> chunks;                 // in file order
    std::deque<std::string> owned;             // data converted from typed fields or moved out of the copy
    std::deque<onnx::TensorProto> references;  // checked references of tensors the copy rewrites
    uint64_t end = 0;
    auto point_to_file = [&](onnx::TensorProto& tensor, uint64_t size, Chunk chunk) {
        chunk.offset = (end + kAlignment - 1) / kAlignment * kAlignment;
        tensor.clear_raw_data();
        tensor.set_data_location(onnx::TensorProto::EXTERNAL);
        tensor.clear_external_data();
        set_entry(tensor, "location", location);
        set_entry(tensor, "offset", std::to_string(chunk.offset));
        set_entry(tensor, "length", std::to_string(size));
        end = chunk.offset + size;
        chunks.push_back(chunk);
    };
    // A checked reference: to the new file when large enough, else its bytes inline.
    auto rehome = [&](onnx::TensorProto& tensor, const onnx::TensorProto& reference) {
        const uint64_t length = checked_reference(reference).length;
        if (length >= options.size_threshold && length > 0) {
            point_to_file(tensor, length, Chunk{0, {}, &reference});
            return;
        }
        std::string data;
        copy_external_bytes(reference, [&data](std::string_view part) { data.append(part); });
        tensor.clear_external_data();
        tensor.clear_data_location();
        tensor.set_raw_data(std::move(data));
    };
    auto externalize = [&](onnx::TensorProto& tensor) {
        if (is_checked_external(tensor)) {
            references.push_back(tensor);
            rehome(tensor, references.back());
            return;
        }
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
        point_to_file(tensor, owned.back().size(), Chunk{0, owned.back(), nullptr});
    };
    for (const auto& initializer : graph.initializer()) {
        const bool large_raw = initializer.data_location() != onnx::TensorProto::EXTERNAL &&
                               initializer.data_type() != onnx::TensorProto::STRING && initializer.has_raw_data() &&
                               !initializer.raw_data().empty() &&
                               initializer.raw_data().size() >= options.size_threshold;
        const bool checked = is_checked_external(initializer);
        onnx::TensorProto& tensor = *target.add_initializer();
        if (!large_raw && !checked) {
            tensor = initializer;
            externalize(tensor);
            continue;
        }
        tensor.set_name(initializer.name());
        tensor.set_data_type(initializer.data_type());
        *tensor.mutable_dims() = initializer.dims();
        tensor.set_doc_string(initializer.doc_string());
        if (checked)
            rehome(tensor, initializer);
        else
            point_to_file(tensor, initializer.raw_data().size(), Chunk{0, initializer.raw_data(), nullptr});
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
    for (auto& function : *copy.mutable_functions())
        for (auto& node : *function.mutable_node())
            for (auto& attribute : *node.mutable_attribute())
                if (attribute.has_t()) externalize(*attribute.mutable_t());

    const std::string bytes = bytes_from_onnx(copy);  // checks the size before anything is written
    logger().info(fmt::format("Saving ONNX model to: {}", path));
    logger().verbose(fmt::format("Writing {} tensor(s) ({} bytes) to external data file: {}", chunks.size(), end,
                                 data_path.string()));
    write_file_atomically(data_path.string(), [&](std::FILE* out) {
        uint64_t written = 0;
        auto write = [&](std::string_view part) {
            if (!part.empty() && std::fwrite(part.data(), 1, part.size(), out) != part.size())
                throw PolygraphyException(fmt::format("Failed to write external data to '{}'", data_path.string()));
            written += part.size();
        };
        static const std::string padding(kAlignment, '\0');
        for (const Chunk& chunk : chunks) {
            write(std::string_view(padding).substr(0, static_cast<std::size_t>(chunk.offset - written)));
            if (chunk.reference)
                copy_external_bytes(*chunk.reference, write);
            else
                write(chunk.memory);
        }
    });
    write_file_atomically(path, bytes);
}

}  // namespace polygraphy
