#include "external_weights.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/file_io.h"

namespace polygraphy::testing {
namespace {

constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

// splitmix64's output function: the value of step i is mix(seed + (i + 1) * gamma), so any element of
// a stream can be computed on its own.
uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::size_t element_size(DataType dtype) {
    if (dtype == DataType::kString || dtype == DataType::kInt4 || dtype == DataType::kUInt4 || dtype_size(dtype) == 0)
        throw InternalError(fmt::format("WeightWriter cannot write {} tensors", dtype_name(dtype)));
    return dtype_size(dtype);
}

void add_external_entry(onnx::TensorProto& proto, const std::string& key, const std::string& value) {
    auto* entry = proto.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
}

}  // namespace

ElementFill uniform_fill(uint64_t seed, float lo, float hi) {
    return [seed, lo, span = hi - lo](void* out, int64_t first, int64_t count) {
        auto* values = static_cast<float*>(out);
        uint64_t state = seed + static_cast<uint64_t>(first + 1) * kGoldenGamma;
        for (int64_t i = 0; i < count; ++i, state += kGoldenGamma) {
            const float unit = static_cast<float>(mix(state) >> 40) * 0x1.0p-24f;  // [0, 1), 24 random bits
            values[i] = lo + span * unit;
        }
    };
}

uint64_t tensor_seed(uint64_t model_seed, const std::string& name) {
    uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
    for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ull;
    return mix(hash ^ mix(model_seed + kGoldenGamma));
}

WeightWriter::WeightWriter(std::FILE* out, std::string location, Layout layout)
    : out_(out), location_(std::move(location)), layout_(layout) {
    if (!out_) throw InternalError("WeightWriter needs an open file for external data");
    if (layout_.alignment == 0 || layout_.chunk_bytes == 0)
        throw InternalError("WeightWriter needs a non-zero alignment and chunk size");
}

void WeightWriter::write_bytes(const void* data, std::size_t size) {
    if (size != 0 && std::fwrite(data, 1, size, out_) != size)
        throw PolygraphyException(fmt::format("Could not write external data {}: {}", location_, std::strerror(errno)));
    file_bytes_ += size;
}

onnx::TensorProto WeightWriter::write(const std::string& name, DataType dtype, const Shape& shape,
                                      const ElementFill& fill) {
    const std::size_t item = element_size(dtype);
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;
    const uint64_t bytes = static_cast<uint64_t>(count) * item;

    onnx::TensorProto proto;
    proto.set_name(name);
    proto.set_data_type(dtype_to_onnx(dtype));
    for (int64_t dim : shape) proto.add_dims(dim);
    tensor_bytes_ += bytes;

    if (!external() || bytes < layout_.size_threshold) {
        std::string raw(bytes, '\0');
        if (count > 0) fill(raw.data(), 0, count);
        proto.set_raw_data(std::move(raw));
        return proto;
    }

    const uint64_t padding = (layout_.alignment - file_bytes_ % layout_.alignment) % layout_.alignment;
    const std::vector<char> zeros(padding, '\0');
    write_bytes(zeros.data(), zeros.size());
    const uint64_t offset = file_bytes_;

    const int64_t chunk_elements = std::max<int64_t>(1, static_cast<int64_t>(layout_.chunk_bytes / item));
    std::vector<char> chunk(static_cast<std::size_t>(std::min<int64_t>(chunk_elements, count)) * item);
    for (int64_t first = 0; first < count; first += chunk_elements) {
        const int64_t n = std::min(chunk_elements, count - first);
        fill(chunk.data(), first, n);
        write_bytes(chunk.data(), static_cast<std::size_t>(n) * item);
    }

    proto.set_data_location(onnx::TensorProto::EXTERNAL);
    add_external_entry(proto, "location", location_);
    add_external_entry(proto, "offset", std::to_string(offset));
    add_external_entry(proto, "length", std::to_string(bytes));
    return proto;
}

onnx::TensorProto WeightWriter::write(const std::string& name, const Tensor& value) {
    const auto* bytes = static_cast<const char*>(value.data());
    const std::size_t item = element_size(value.dtype());
    return write(name, value.dtype(), value.shape(), [bytes, item](void* out, int64_t first, int64_t count) {
        std::memcpy(out, bytes + first * item, static_cast<std::size_t>(count) * item);
    });
}

std::string external_data_location(const std::string& model_path) {
    return std::filesystem::path(model_path).filename().string() + ".data";
}

GeneratedModelInfo write_generated_model(const std::string& model_path, bool external_data,
                                         const std::function<onnx::ModelProto(WeightWriter&)>& build,
                                         uint64_t planned_weight_bytes, WeightWriter::Layout layout) {
    namespace fs = std::filesystem;
    const auto too_large = [&](const std::string& what, uint64_t bytes) {
        return PolygraphyException(
            fmt::format("Cannot write {}: {} {} bytes, over protobuf's 2 GiB limit\nNote: keep "
                        "the weights in external data",
                        model_path, what, bytes));
    };
    if (!external_data && planned_weight_bytes > static_cast<uint64_t>(INT_MAX))
        throw too_large("its weights alone are", planned_weight_bytes);
    GeneratedModelInfo info;
    onnx::ModelProto model;
    std::string data_path;
    if (external_data) {
        const std::string location = external_data_location(model_path);
        data_path = (fs::path(model_path).parent_path() / location).string();
        write_file_atomically(data_path, [&](std::FILE* out) {
            WeightWriter writer(out, location, layout);
            model = build(writer);
            info.tensor_bytes = writer.tensor_bytes();
            info.file_bytes = writer.file_bytes();
        });
    } else {
        WeightWriter writer;
        model = build(writer);
        info.tensor_bytes = writer.tensor_bytes();
    }
    info.node_count = model.graph().node_size();
    info.model_bytes = model.ByteSizeLong();
    try {
        if (info.model_bytes > static_cast<uint64_t>(INT_MAX)) throw too_large("the model is", info.model_bytes);
        // Straight to the file: a serialised copy in memory would double an inline model's footprint.
        write_file_atomically(model_path, [&](std::FILE* out) {
            if (!model.SerializeToFileDescriptor(fileno(out)))
                throw PolygraphyException("protobuf serialisation failed");
        });
    } catch (...) {
        if (!data_path.empty()) {
            std::error_code ignored;
            fs::remove(data_path, ignored);
        }
        throw;
    }
    return info;
}

}  // namespace polygraphy::testing
