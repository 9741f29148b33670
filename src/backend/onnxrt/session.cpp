// ONNX-Runtime sessions: creation (SessionFromOnnx), I/O metadata and inference through the C API.
#if POLYGRAPHY_HAVE_ONNXRUNTIME

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>

#include "backend/onnx/external_data.h"
#include "backend/onnxrt/ort_api.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/python_repr.h"

namespace polygraphy::onnxrt {

using namespace detail;

struct Session::Impl {
    SessionPtr session;
    MemoryInfoPtr cpu_memory;  ///< describes caller-owned input buffers
    std::vector<std::string> providers;
    TensorMetadata input_metadata;
    TensorMetadata output_metadata;
    std::vector<std::string> output_names;
    std::vector<const char*> output_name_pointers;  ///< into output_names, for Run
};

namespace {

// Copies a string allocated by ORT and frees it.
std::string take_string(OrtAllocator* allocator, char* raw) {
    std::string result = raw ? raw : "";
    if (raw) check(api().AllocatorFree(allocator, raw), "Could not free an ONNX-Runtime string");
    return result;
}

MetadataEntry describe(const OrtTypeInfo* type_info) {
    const OrtApi& ort = api();
    ONNXType onnx_type = ONNX_TYPE_UNKNOWN;
    check(ort.GetOnnxTypeFromTypeInfo(type_info, &onnx_type), "Could not read an ONNX-Runtime type");
    if (onnx_type != ONNX_TYPE_TENSOR) return MetadataEntry{};  // sequences, maps, optionals: unknown
    const OrtTensorTypeAndShapeInfo* info = nullptr;  // owned by type_info
    check(ort.CastTypeInfoToTensorInfo(type_info, &info), "Could not read an ONNX-Runtime tensor type");
    ONNXTensorElementDataType element_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    check(ort.GetTensorElementType(info, &element_type), "Could not read an ONNX-Runtime element type");
    std::size_t rank = 0;
    check(ort.GetDimensionsCount(info, &rank), "Could not read an ONNX-Runtime tensor rank");
    std::vector<int64_t> dims(rank);
    std::vector<const char*> symbols(rank, nullptr);
    if (rank) {
        check(ort.GetDimensions(info, dims.data(), rank), "Could not read ONNX-Runtime tensor dimensions");
        check(ort.GetSymbolicDimensions(info, symbols.data(), rank), "Could not read ONNX-Runtime dimension names");
    }
    DynShape shape;
    shape.reserve(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        if (dims[i] >= 0) shape.push_back(Dim::fixed(dims[i]));
        else if (symbols[i] && *symbols[i]) shape.push_back(Dim::named(symbols[i]));
        else shape.push_back(Dim::unknown());
    }
    return MetadataEntry{dtype_from_ort(element_type), std::move(shape)};
}

using GetNameFn = OrtStatus*(ORT_API_CALL*)(const OrtSession*, size_t, OrtAllocator*, char**);
using GetTypeInfoFn = OrtStatus*(ORT_API_CALL*)(const OrtSession*, size_t, OrtTypeInfo**);

TensorMetadata read_metadata(const OrtSession* session, std::size_t count, GetNameFn get_name,
                             GetTypeInfoFn get_type_info) {
    OrtAllocator* allocator = nullptr;
    check(api().GetAllocatorWithDefaultOptions(&allocator), "Could not get ONNX-Runtime's allocator");
    TensorMetadata metadata;
    for (std::size_t i = 0; i < count; ++i) {
        char* raw_name = nullptr;
        check(get_name(session, i, allocator, &raw_name), "Could not read an ONNX-Runtime session I/O name");
        const std::string name = take_string(allocator, raw_name);
        OrtTypeInfo* raw_info = nullptr;
        check(get_type_info(session, i, &raw_info), "Could not read the type of '" + name + "'");
        TypeInfoPtr info(raw_info);
        MetadataEntry entry = describe(info.get());
        metadata.add(name, entry.dtype, std::move(entry.shape));
    }
    return metadata;
}

// Enables one (already matched) provider on `options`: ORT's failure status, or null. CPU needs
// nothing: ORT always adds it as the fallback. Throws UnsupportedError for providers polygraphy has
// no way to enable.
StatusPtr enable_provider(OrtSessionOptions* options, const std::string& provider) {
    const OrtApi& ort = api();
    if (provider == "CPUExecutionProvider") return nullptr;
    if (provider == "CUDAExecutionProvider") {
        OrtCUDAProviderOptionsV2* raw = nullptr;
        if (OrtStatus* status = ort.CreateCUDAProviderOptions(&raw)) return StatusPtr(status);
        CUDAProviderOptionsV2Ptr cuda(raw);
        return StatusPtr(ort.SessionOptionsAppendExecutionProvider_CUDA_V2(options, cuda.get()));
    }
    if (provider == "TensorrtExecutionProvider") {
        OrtTensorRTProviderOptionsV2* raw = nullptr;
        if (OrtStatus* status = ort.CreateTensorRTProviderOptions(&raw)) return StatusPtr(status);
        TensorRTProviderOptionsV2Ptr tensorrt(raw);
        return StatusPtr(ort.SessionOptionsAppendExecutionProvider_TensorRT_V2(options, tensorrt.get()));
    }
    // Providers ORT enables by short name through its generic entry point.
    static const std::map<std::string, std::string> kShortNames = {
        {"QNNExecutionProvider", "QNN"},         {"SNPEExecutionProvider", "SNPE"},
        {"XnnpackExecutionProvider", "XNNPACK"}, {"WebNNExecutionProvider", "WEBNN"},
        {"AzureExecutionProvider", "AZURE"},     {"OpenVINOExecutionProvider", "OpenVINO"},
        {"VitisAIExecutionProvider", "VitisAI"}, {"CoreMLExecutionProvider", "CoreML"},
        {"WebGpuExecutionProvider", "WebGPU"},
    };
    const auto found = kShortNames.find(provider);
    if (found == kShortNames.end())
        throw UnsupportedError("ONNX-Runtime execution provider " + provider + " is available but polygraphy cannot "
                               "enable it.\nNote: providers polygraphy can enable: CPUExecutionProvider, "
                               "CUDAExecutionProvider, TensorrtExecutionProvider and ORT's generic ones (XNNPACK, "
                               "OpenVINO, QNN, ...)");
    return StatusPtr(ort.SessionOptionsAppendExecutionProvider(options, found->second.c_str(), nullptr, nullptr, 0));
}

// The providers of available_providers() that can be enabled here. ORT lists every provider it was
// built with, but CUDA and TensorRT also need provider libraries (and a GPU) that a CPU package
// does not ship, so each is tried on scratch options.
std::vector<std::string> enableable_providers() {
    std::vector<std::string> usable;
    for (const std::string& provider : available_providers()) {
        OrtSessionOptions* raw = nullptr;
        check(api().CreateSessionOptions(&raw), "Could not create ONNX-Runtime session options");
        SessionOptionsPtr scratch(raw);
        try {
            if (!enable_provider(scratch.get(), provider)) usable.push_back(provider);
        } catch (const UnsupportedError&) {
        }
    }
    return usable;
}

// Enables `provider`, or says plainly that this ONNX-Runtime cannot, instead of ORT's internal
// message (which names ORT's source files and loggers).
void append_provider(OrtSessionOptions* options, const std::string& provider) {
    if (!enable_provider(options, provider)) return;
    const std::vector<std::string> usable = enableable_providers();
    const bool cpu_only = usable == std::vector<std::string>{"CPUExecutionProvider"};
    throw UnsupportedError(
        (cpu_only ? "This ONNX-Runtime build has only the CPU execution provider: " + provider + " cannot be enabled"
                  : "This ONNX-Runtime build cannot enable " + provider) +
        " (ONNX-Runtime was built with it, but its provider library or device is missing here).\nNote: providers "
        "that can be enabled: " +
        python_list_repr(usable) + ". Use --providers cpu or leave --providers out");
}

SessionOptionsPtr make_session_options(const SessionOptions& options, const std::vector<std::string>& providers) {
    const OrtApi& ort = api();
    OrtSessionOptions* raw = nullptr;
    check(ort.CreateSessionOptions(&raw), "Could not create ONNX-Runtime session options");
    SessionOptionsPtr result(raw);
    if (options.intra_op_num_threads < 0 || options.inter_op_num_threads < 0)
        throw PolygraphyException("ONNX-Runtime thread counts must be >= 0 (0: ONNX-Runtime's default).\nNote: given "
                                  "intra-op threads: " + std::to_string(options.intra_op_num_threads) +
                                  ", inter-op threads: " + std::to_string(options.inter_op_num_threads));
    check(ort.SetIntraOpNumThreads(raw, options.intra_op_num_threads), "Could not set ONNX-Runtime intra-op threads");
    check(ort.SetInterOpNumThreads(raw, options.inter_op_num_threads), "Could not set ONNX-Runtime inter-op threads");
    ::GraphOptimizationLevel level = ORT_ENABLE_ALL;  // the C enum, not ours
    switch (options.graph_optimization_level) {
        case onnxrt::GraphOptimizationLevel::kDisableAll: level = ORT_DISABLE_ALL; break;
        case onnxrt::GraphOptimizationLevel::kBasic: level = ORT_ENABLE_BASIC; break;
        case onnxrt::GraphOptimizationLevel::kExtended: level = ORT_ENABLE_EXTENDED; break;
        case onnxrt::GraphOptimizationLevel::kAll: level = ORT_ENABLE_ALL; break;
    }
    check(ort.SetSessionGraphOptimizationLevel(raw, level), "Could not set the ONNX-Runtime optimization level");
    const ::ExecutionMode mode =
        options.execution_mode == onnxrt::ExecutionMode::kParallel ? ORT_PARALLEL : ORT_SEQUENTIAL;
    check(ort.SetSessionExecutionMode(raw, mode), "Could not set the ONNX-Runtime execution mode");
    check(ort.SetSessionLogSeverityLevel(raw, static_cast<int>(log_level())), "Could not set ONNX-Runtime logging");
    if (options.optimized_model_path) {
        const std::filesystem::path target(*options.optimized_model_path);
        std::error_code error;
        if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), error);
        if (error)
            throw PolygraphyException("Could not create the folder of '" + *options.optimized_model_path + "'" + ": " +
                                      error.message());
        check(ort.SetOptimizedModelFilePath(raw, options.optimized_model_path->c_str()),
              "Could not set where ONNX-Runtime saves its optimized model");
        // Weights go to <file>.data beside the saved graph, so that it loads wherever it is saved (left
        // alone, ONNX-Runtime refers to the source model's external data file by its relative name).
        const std::string data_file = target.filename().string() + ".data";
        check(ort.AddSessionConfigEntry(raw, "session.optimized_model_external_initializers_file_name",
                                        data_file.c_str()),
              "Could not set where ONNX-Runtime saves the optimized model's weights");
        check(ort.AddSessionConfigEntry(raw, "session.optimized_model_external_initializers_min_size_in_bytes", "1024"),
              "Could not set which weights ONNX-Runtime saves apart");
        logger().info("ONNX-Runtime saves its optimized graph to " + *options.optimized_model_path);
    }
    for (const std::string& library : options.custom_op_libraries) {
        std::error_code error;
        if (!std::filesystem::is_regular_file(library, error))
            throw PolygraphyException("ONNX-Runtime custom-op library '" + library + "' does not exist");
        if (OrtStatus* status = ort.RegisterCustomOpsLibrary_V2(raw, library.c_str())) {
            std::string reason = ort.GetErrorMessage(status);
            ort.ReleaseStatus(status);
            for (char& c : reason)
                if (c == '\n') c = ' ';
            throw PolygraphyException("ONNX-Runtime could not load the custom-op library '" + library + "': " + reason +
                                      " (a custom-op library exports RegisterCustomOps)");
        }
        logger().verbose("ONNX-Runtime loaded the custom-op library " + library);
    }
    for (const std::string& provider : providers) append_provider(raw, provider);
    return result;
}

// What a session is created from: a file ONNX-Runtime reads itself, serialized bytes, or a model in memory.
struct SessionSource {
    const std::string* path = nullptr;
    const std::string* bytes = nullptr;
    const onnx::ModelProto* model = nullptr;
};

// Initializers of at least this many bytes go to ONNX-Runtime apart from the serialized graph.
constexpr std::size_t kWeightBytesApart = 1024;

// ONNX-Runtime reads the weights of a model in memory without serializing them: the graph goes as
// bytes with its checked external references, which ONNX-Runtime reads from their folder (as from a
// path: no copy in polygraphy), and the weights held in memory go as OrtValues over their bytes
// (ONNX-Runtime copies them while creating the session).
OrtSession* create_from_model(const onnx::ModelProto& model, OrtSessionOptions* session_options) {
    const OrtApi& ort = api();
    const WeightlessCopy weightless = weightless_copy(model, kWeightBytesApart);
    if (weightless.folder)
        check(ort.AddSessionConfigEntry(session_options, "session.model_external_initializers_file_folder_path",
                                        weightless.folder->c_str()),
              "Could not tell ONNX-Runtime where the external data is");

    OrtMemoryInfo* memory = nullptr;
    check(ort.CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory),
          "Could not describe CPU memory for ONNX-Runtime");
    const MemoryInfoPtr cpu_memory(memory);
    std::vector<std::string> names;
    std::vector<ValuePtr> values;
    std::vector<ExternalBytes> mapped;  // alive until the session is created
    auto hand_over = [&](const onnx::TensorProto& tensor, std::string_view bytes) {
        const auto element_type = static_cast<ONNXTensorElementDataType>(tensor.data_type());
        const std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
        static int64_t no_dims = 0;
        OrtValue* raw = nullptr;
        check(
            ort.CreateTensorWithDataAsOrtValue(cpu_memory.get(), const_cast<char*>(bytes.data()), bytes.size(),
                                               dims.empty() ? &no_dims : dims.data(), dims.size(), element_type, &raw),
            "Could not hand initializer '" + tensor.name() + "' to ONNX-Runtime", ErrorKind::kModel);
        values.emplace_back(raw);
        names.push_back(tensor.name());
    };
    for (const onnx::TensorProto* tensor : weightless.in_memory) hand_over(*tensor, tensor->raw_data());
    for (const onnx::TensorProto* tensor : weightless.elsewhere) {
        mapped.push_back(read_external_bytes(*tensor));
        hand_over(*tensor, mapped.back().bytes);
    }
    if (!values.empty()) {
        std::vector<const char*> name_pointers;
        std::vector<const OrtValue*> value_pointers;
        for (std::size_t i = 0; i < values.size(); ++i) {
            name_pointers.push_back(names[i].c_str());
            value_pointers.push_back(values[i].get());
        }
        check(ort.AddExternalInitializers(session_options, name_pointers.data(), value_pointers.data(), values.size()),
              "Could not hand the model's weights to ONNX-Runtime");
    }
    std::string graph;
    if (!weightless.model.SerializeToString(&graph))
        throw PolygraphyException("Cannot serialize the model's graph for ONNX-Runtime (over 2 GiB without weights?)");
    logger().verbose("Handing ONNX-Runtime a graph of " + std::to_string(graph.size()) + " bytes, " +
                     std::to_string(values.size()) + " initializer(s) from memory" +
                     (weightless.folder ? ", external data from " + weightless.folder->string() : std::string()));
    OrtSession* raw = nullptr;
    check(ort.CreateSessionFromArray(env(), graph.data(), graph.size(), session_options, &raw),
          "ONNX-Runtime could not create a session for the model", ErrorKind::kModel);
    return raw;
}

std::shared_ptr<Session> create_session(const SessionSource& source, const SessionOptions& options) {
    const OrtApi& ort = api();
    const std::vector<std::string> providers = resolve_providers(options.providers, available_providers());
    logger().start("Creating ONNX-Runtime Inference Session with providers: " + python_list_repr(providers));
    SessionOptionsPtr session_options = make_session_options(options, providers);

    OrtSession* raw = nullptr;
    if (source.path) {
        check(ort.CreateSession(env(), source.path->c_str(), session_options.get(), &raw),
              "ONNX-Runtime could not create a session for " + *source.path, ErrorKind::kModel);
    } else if (source.bytes) {
        check(
            ort.CreateSessionFromArray(env(), source.bytes->data(), source.bytes->size(), session_options.get(), &raw),
            "ONNX-Runtime could not create a session for the model", ErrorKind::kModel);
    } else {
        raw = create_from_model(*source.model, session_options.get());
    }
    auto impl = std::make_unique<Session::Impl>();
    impl->session.reset(raw);
    impl->providers = providers;

    OrtMemoryInfo* memory = nullptr;
    check(ort.CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory),
          "Could not describe CPU memory for ONNX-Runtime");
    impl->cpu_memory.reset(memory);

    std::size_t input_count = 0, output_count = 0;
    check(ort.SessionGetInputCount(raw, &input_count), "Could not count the session's inputs");
    check(ort.SessionGetOutputCount(raw, &output_count), "Could not count the session's outputs");
    impl->input_metadata = read_metadata(raw, input_count, ort.SessionGetInputName, ort.SessionGetInputTypeInfo);
    impl->output_metadata = read_metadata(raw, output_count, ort.SessionGetOutputName, ort.SessionGetOutputTypeInfo);
    impl->output_names = impl->output_metadata.keys();
    for (const std::string& name : impl->output_names) impl->output_name_pointers.push_back(name.c_str());
    return std::make_shared<Session>(std::move(impl));
}

// int4/uint4: polygraphy keeps one element per byte, ORT packs two per byte (low nibble first).
std::vector<uint8_t> pack_4bit(const Tensor& tensor) {
    const auto* values = static_cast<const uint8_t*>(tensor.data());
    std::vector<uint8_t> packed(static_cast<std::size_t>((tensor.numel() + 1) / 2), 0);
    for (int64_t i = 0; i < tensor.numel(); ++i)
        packed[static_cast<std::size_t>(i / 2)] |= static_cast<uint8_t>((values[i] & 0x0F) << ((i % 2) * 4));
    return packed;
}

Tensor unpack_4bit(DataType dtype, Shape shape, const uint8_t* packed) {
    Tensor tensor(dtype, std::move(shape));
    auto* values = static_cast<uint8_t*>(tensor.data());
    for (int64_t i = 0; i < tensor.numel(); ++i) {
        const uint8_t nibble = (packed[i / 2] >> ((i % 2) * 4)) & 0x0F;
        values[i] = dtype == DataType::kInt4 ? static_cast<uint8_t>(static_cast<int8_t>((nibble ^ 0x08) - 0x08))
                                             : nibble;
    }
    return tensor;
}

// An OrtValue for one input. Numeric tensors are wrapped in place: ORT never writes to inputs.
ValuePtr make_input(const Session::Impl& impl, const std::string& name, const Tensor& tensor,
                    std::vector<std::vector<uint8_t>>& scratch) {
    const OrtApi& ort = api();
    const auto element_type = dtype_to_ort(tensor.dtype());
    if (!element_type) throw InputError("Input tensor: " + name + " | Has an undefined dtype.");
    static int64_t no_dims = 0;  // ORT wants a non-null pointer even for scalars
    const int64_t* dims = tensor.shape().empty() ? &no_dims : tensor.shape().data();
    const std::string context = "ONNX-Runtime rejected input tensor: " + name;
    OrtValue* raw = nullptr;

    if (tensor.dtype() == DataType::kString) {
        OrtAllocator* allocator = nullptr;
        check(ort.GetAllocatorWithDefaultOptions(&allocator), "Could not get ONNX-Runtime's allocator");
        check(ort.CreateTensorAsOrtValue(allocator, dims, tensor.shape().size(), *element_type, &raw), context,
              ErrorKind::kInput);
        ValuePtr value(raw);
        const auto& strings = tensor.strings();
        for (std::size_t i = 0; i < strings.size(); ++i) {
            // Sized copies keep embedded NUL bytes (FillStringTensor would cut strings at them).
            char* buffer = nullptr;
            check(ort.GetResizedStringTensorElementBuffer(value.get(), i, strings[i].size(), &buffer), context,
                  ErrorKind::kInput);
            if (!strings[i].empty()) std::memcpy(buffer, strings[i].data(), strings[i].size());
        }
        return value;
    }

    void* data = const_cast<void*>(tensor.data());
    std::size_t nbytes = tensor.nbytes();
    if (tensor.dtype() == DataType::kInt4 || tensor.dtype() == DataType::kUInt4) {
        scratch.push_back(pack_4bit(tensor));
        data = scratch.back().data();
        nbytes = scratch.back().size();
    }
    static uint8_t empty_buffer = 0;  // ORT rejects null data even when there are no elements
    if (!data) data = &empty_buffer;
    check(ort.CreateTensorWithDataAsOrtValue(impl.cpu_memory.get(), data, nbytes, dims, tensor.shape().size(),
                                             *element_type, &raw),
          context, ErrorKind::kInput);
    return ValuePtr(raw);
}

// Numeric outputs keep ORT's buffer (no copy): the tensor owns the OrtValue, which keeps its
// allocator alive, so it stays valid after the session is gone. That halves the peak memory of
// `--onnx-outputs mark all` on large models.
Tensor read_output(const std::string& name, ValuePtr owned) {
    const OrtApi& ort = api();
    OrtValue* value = owned.get();
    const std::string context = "Could not read ONNX-Runtime output tensor: " + name;
    if (!value) throw PolygraphyException(context + ": ONNX-Runtime returned no value");
    ONNXType value_type = ONNX_TYPE_UNKNOWN;
    check(ort.GetValueType(value, &value_type), context);
    if (value_type != ONNX_TYPE_TENSOR)
        throw UnsupportedError("Output tensor: " + name + " | Is not a tensor (ONNX value type " +
                               std::to_string(static_cast<int>(value_type)) +
                               "); only tensor outputs are supported.");
    OrtTensorTypeAndShapeInfo* raw_info = nullptr;
    check(ort.GetTensorTypeAndShape(value, &raw_info), context);
    TensorTypeAndShapeInfoPtr info(raw_info);
    ONNXTensorElementDataType element_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    check(ort.GetTensorElementType(info.get(), &element_type), context);
    std::size_t rank = 0;
    check(ort.GetDimensionsCount(info.get(), &rank), context);
    Shape shape(rank);
    if (rank) check(ort.GetDimensions(info.get(), shape.data(), rank), context);
    const auto dtype = dtype_from_ort(element_type);
    if (!dtype)
        throw UnsupportedError("Output tensor: " + name + " | Has an ONNX-Runtime element type polygraphy does not "
                               "know (" + std::to_string(static_cast<int>(element_type)) + ").");

    if (*dtype == DataType::kString) {
        Tensor tensor(*dtype, std::move(shape));
        const auto count = static_cast<std::size_t>(tensor.numel());
        if (count == 0) return tensor;
        std::size_t total = 0;
        check(ort.GetStringTensorDataLength(value, &total), context);
        std::string content(total, '\0');
        std::vector<std::size_t> offsets(count);
        check(ort.GetStringTensorContent(value, content.data(), total, offsets.data(), count), context);
        auto& strings = tensor.strings();
        for (std::size_t i = 0; i < count; ++i) {
            const std::size_t end = i + 1 < count ? offsets[i + 1] : total;
            if (offsets[i] > end || end > total) throw PolygraphyException(context + ": inconsistent string offsets");
            strings[i].assign(content, offsets[i], end - offsets[i]);
        }
        return tensor;
    }

    void* data = nullptr;
    check(ort.GetTensorMutableData(value, &data), context);
    if (*dtype == DataType::kInt4 || *dtype == DataType::kUInt4)
        return unpack_4bit(*dtype, std::move(shape), static_cast<const uint8_t*>(data));
    if (shape_volume(shape) == 0) return Tensor(*dtype, std::move(shape));
    std::shared_ptr<void> keep_alive(owned.release(), [](void* raw) { api().ReleaseValue(static_cast<OrtValue*>(raw)); });
    return Tensor::wrap(*dtype, std::move(shape), std::move(keep_alive), data);
}

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

const TensorMetadata& Session::input_metadata() const { return impl_->input_metadata; }
const TensorMetadata& Session::output_metadata() const { return impl_->output_metadata; }
const std::vector<std::string>& Session::providers() const { return impl_->providers; }

TensorMap Session::run(const TensorMap& feed, double* run_seconds) const {
    const OrtApi& ort = api();
    // ORT reports a missing input only when a kernel reaches it, as a generic failure; check first.
    for (const auto& entry : impl_->input_metadata)
        if (!feed.contains(entry.first))
            throw InputError("Input tensor: " + entry.first + " | Is missing from the feed.\nNote: expected inputs: " +
                             impl_->input_metadata.to_string());
    std::vector<const char*> input_names;
    std::vector<ValuePtr> inputs;
    std::vector<const OrtValue*> input_pointers;
    std::vector<std::vector<uint8_t>> scratch;
    input_names.reserve(feed.size());
    inputs.reserve(feed.size());
    input_pointers.reserve(feed.size());
    for (const auto& [name, tensor] : feed) {
        input_names.push_back(name.c_str());
        inputs.push_back(make_input(*impl_, name, tensor, scratch));
        input_pointers.push_back(inputs.back().get());
    }

    const std::size_t output_count = impl_->output_names.size();
    std::vector<OrtValue*> raw_outputs(output_count, nullptr);
    const auto start = std::chrono::steady_clock::now();
    OrtStatus* status = ort.Run(impl_->session.get(), nullptr, input_names.data(), input_pointers.data(),
                                input_pointers.size(), impl_->output_name_pointers.data(), output_count,
                                raw_outputs.data());
    const auto end = std::chrono::steady_clock::now();
    std::vector<ValuePtr> outputs;
    outputs.reserve(output_count);
    for (OrtValue* raw : raw_outputs) outputs.emplace_back(raw);  // owns whatever ORT produced, even on failure
    check(status, "ONNX-Runtime inference failed", ErrorKind::kInput);
    if (run_seconds) *run_seconds = std::chrono::duration<double>(end - start).count();

    TensorMap result;
    for (std::size_t i = 0; i < output_count; ++i)
        result.set(impl_->output_names[i], read_output(impl_->output_names[i], std::move(outputs[i])));
    return result;
}

std::shared_ptr<Session> SessionFromOnnx::operator()() const {
    load_library();  // a missing library is reported before the model is loaded
    if (path_) return create_session({.path = &*path_}, options_);
    if (bytes_) {
        const std::string bytes = bytes_();
        return create_session({.bytes = &bytes}, options_);
    }
    const OnnxModel loaded = model_();
    if (!loaded) throw InternalError("SessionFromOnnx: the ONNX loader returned no model");
    return create_session({.model = loaded.get()}, options_);
}

std::shared_ptr<Session> session_from_onnx(const onnx::ModelProto& model, const SessionOptions& options) {
    return create_session({.model = &model}, options);
}

std::shared_ptr<Session> session_from_path(const std::string& model_path, const SessionOptions& options) {
    return create_session({.path = &model_path}, options);
}

}  // namespace polygraphy::onnxrt

#endif  // POLYGRAPHY_HAVE_ONNXRUNTIME
