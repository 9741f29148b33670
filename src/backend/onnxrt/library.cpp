// Loads ONNX-Runtime with dlopen, creates the process-wide environment, converts OrtStatus errors.
#if POLYGRAPHY_HAVE_ONNXRUNTIME

#include <dlfcn.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "backend/onnxrt/ort_api.h"
#include "common/install_layout.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"

#ifndef POLYGRAPHY_ONNXRUNTIME_DEPS_LIB
#define POLYGRAPHY_ONNXRUNTIME_DEPS_LIB ""
#endif

namespace polygraphy::onnxrt {
namespace {

constexpr const char* kLibraryEnvVar = "POLYGRAPHY_ONNXRUNTIME_LIB";
constexpr const char* kSystemLibrary = "libonnxruntime.so.1";
constexpr const char* kInstallHint =
    "Install it with scripts/setup_onnxruntime.sh (then re-run polygraphy), or set POLYGRAPHY_ONNXRUNTIME_LIB "
    "to the path of libonnxruntime.so.1";

struct OpenedLibrary {
    LibraryInfo info;
    const OrtApi* api = nullptr;
};

// Opens one candidate; returns nullopt and sets `error` when it is missing or not a usable ORT.
std::optional<OpenedLibrary> open_candidate(const std::string& path, std::string& error) {
    // RTLD_LOCAL: ORT's bundled protobuf/ONNX symbols must not interpose on ours (they are hidden
    // anyway in official builds). The handle is never closed once the library is in use.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* message = dlerror();
        error = message ? message : path + ": cannot be opened";
        return std::nullopt;
    }
    using GetApiBaseFn = const OrtApiBase* (*)();
    dlerror();
    auto get_api_base = reinterpret_cast<GetApiBaseFn>(dlsym(handle, "OrtGetApiBase"));
    if (!get_api_base) {
        error = path + ": not an ONNX-Runtime library (no OrtGetApiBase symbol)";
        dlclose(handle);
        return std::nullopt;
    }
    const OrtApiBase* base = get_api_base();
    const char* version = base && base->GetVersionString ? base->GetVersionString() : nullptr;
    const OrtApi* table = base && base->GetApi ? base->GetApi(ORT_API_VERSION) : nullptr;
    if (!table) {
        // GetApi returns null when the library predates the API version of our header.
        error = path + ": ONNX-Runtime " + (version ? version : "(unknown version)") + " does not provide C API version " +
                std::to_string(ORT_API_VERSION) + " (ONNX-Runtime >= 1." + std::to_string(ORT_API_VERSION) +
                " is needed)";
        dlclose(handle);
        return std::nullopt;
    }
    return OpenedLibrary{LibraryInfo{path, version ? version : "unknown"}, table};
}

OpenedLibrary open_library() {
    const std::vector<std::string> paths = library_search_paths();
    const char* from_env = std::getenv(kLibraryEnvVar);
    std::string tried;
    for (const std::string& path : paths) {
        std::string error;
        if (auto opened = open_candidate(path, error)) return *opened;
        tried += (tried.empty() ? "" : "; ") + detail::one_line(error);
        if (from_env && *from_env) tried += std::string(" (from ") + kLibraryEnvVar + ")";
    }
    throw PolygraphyException("Could not load the ONNX-Runtime library (tried: " + tried + "). " + kInstallHint);
}

std::mutex g_load_mutex;
std::atomic<const OpenedLibrary*> g_library{nullptr};

const OpenedLibrary& loaded_library() {
    if (const OpenedLibrary* library = g_library.load(std::memory_order_acquire)) return *library;
    std::lock_guard<std::mutex> lock(g_load_mutex);
    if (const OpenedLibrary* library = g_library.load(std::memory_order_acquire)) return *library;
    // Leaked on purpose, like the dlopen handle: handles released during static destruction use it.
    auto* library = new OpenedLibrary(open_library());
    logger().verbose("Loaded ONNX-Runtime " + library->info.version + " from " + library->info.path);
    g_library.store(library, std::memory_order_release);
    return *library;
}

// Forwards ONNX-Runtime's log messages to polygraphy's logger (ORT would otherwise print on stderr).
// ORT logs each failure it also returns as a status; polygraphy reports that status as an exception,
// so ORT's own error lines are shown only in verbose runs instead of printing every failure twice.
void forward_log(void*, OrtLoggingLevel severity, const char* category, const char*, const char* code_location,
                 const char* message) {
    Severity ours = Severity::kWarning;
    switch (severity) {
        case ORT_LOGGING_LEVEL_VERBOSE: ours = Severity::kSuperVerbose; break;
        case ORT_LOGGING_LEVEL_INFO: ours = Severity::kExtraVerbose; break;
        case ORT_LOGGING_LEVEL_WARNING: ours = Severity::kWarning; break;
        case ORT_LOGGING_LEVEL_ERROR:
        case ORT_LOGGING_LEVEL_FATAL: ours = Severity::kVerbose; break;
    }
    if (!logger().enabled(ours)) return;
    std::string text = "ONNX-Runtime";
    if (severity >= ORT_LOGGING_LEVEL_ERROR) text += " error";
    if (category && *category) text += std::string(" [") + category + "]";
    if (ours <= Severity::kExtraVerbose && code_location && *code_location) text += std::string(" ") + code_location;
    text += ": ";
    std::string_view body = message ? message : "";
    while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.remove_suffix(1);
    text += body;
    logger().log(ours, text);
}

}  // namespace

bool built_with_onnxruntime() { return true; }

std::vector<std::string> library_search_paths() {
    const char* from_env = std::getenv(kLibraryEnvVar);
    if (from_env && *from_env) return {from_env};  // an explicit choice: never silently use another copy
    std::vector<std::string> paths;
    // The copy installed with libpolygraphy (cmake --install, the .deb), found from the library's own
    // location so that a moved prefix still finds it.
    const std::filesystem::path private_folder = install_layout::private_folder();
    if (!private_folder.empty()) {
        const std::filesystem::path bundled = private_folder / "onnxruntime" / kSystemLibrary;
        std::error_code error;
        if (std::filesystem::exists(bundled, error)) paths.push_back(bundled.string());
    }
    const std::string deps = POLYGRAPHY_ONNXRUNTIME_DEPS_LIB;
    if (!deps.empty()) paths.push_back(deps);
    paths.push_back(kSystemLibrary);
    return paths;
}

const LibraryInfo& load_library() { return loaded_library().info; }

LibraryInfo probe_library() {
    OpenedLibrary opened = open_library();
    // dlopen handles are reference-counted; leaving this one open only keeps a count up.
    return opened.info;
}

bool is_available(std::string* reason) {
    try {
        load_library();
        return true;
    } catch (const std::exception& error) {
        if (reason) *reason = error.what();
        return false;
    }
}

std::vector<std::string> available_providers() {
    const OrtApi& api = detail::api();
    char** names = nullptr;
    int count = 0;
    detail::check(api.GetAvailableProviders(&names, &count), "Could not list ONNX-Runtime execution providers");
    std::vector<std::string> providers;
    for (int i = 0; i < count; ++i) providers.emplace_back(names[i]);
    detail::check(api.ReleaseAvailableProviders(names, count), "Could not release the provider list");
    return providers;
}

namespace detail {

const OrtApi& api() { return *loaded_library().api; }

OrtLoggingLevel log_level() {
    if (logger().enabled(Severity::kSuperVerbose)) return ORT_LOGGING_LEVEL_VERBOSE;
    if (logger().enabled(Severity::kExtraVerbose)) return ORT_LOGGING_LEVEL_INFO;
    return ORT_LOGGING_LEVEL_WARNING;
}

OrtEnv* env() {
    static OrtEnv* const environment = [] {
        const OrtApi& table = api();
        OrtEnv* created = nullptr;
        check(table.CreateEnvWithCustomLogger(forward_log, nullptr, log_level(), "polygraphy", &created),
              "Could not create the ONNX-Runtime environment");
        return created;
    }();
    return environment;
}

std::string one_line(std::string_view message) {
    std::string result;
    result.reserve(message.size());
    bool in_space = false;
    for (char c : message) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            in_space = true;
            continue;
        }
        if (in_space && !result.empty()) result += ' ';
        in_space = false;
        result += c;
    }
    return result;
}

void check(OrtStatus* raw_status, std::string_view context, ErrorKind kind) {
    if (!raw_status) return;
    StatusPtr status(raw_status);
    const OrtErrorCode code = api().GetErrorCode(status.get());
    const char* ort_message = api().GetErrorMessage(status.get());
    const std::string message = std::string(context) + ": " + one_line(ort_message ? ort_message : "unknown error");
    switch (kind) {
        case ErrorKind::kModel:
            if (code == ORT_NO_SUCHFILE) throw PolygraphyException(message);
            throw ModelError(message);
        case ErrorKind::kInput:
            if (code == ORT_INVALID_ARGUMENT) throw InputError(message);
            throw PolygraphyException(message);
        case ErrorKind::kGeneric: break;
    }
    throw PolygraphyException(message);
}

std::optional<DataType> dtype_from_ort(ONNXTensorElementDataType type) {
    switch (type) {
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED: return std::nullopt;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return DataType::kFloat32;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return DataType::kUInt8;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return DataType::kInt8;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return DataType::kUInt16;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16: return DataType::kInt16;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return DataType::kInt32;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return DataType::kInt64;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING: return DataType::kString;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return DataType::kBool;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return DataType::kFloat16;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return DataType::kFloat64;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return DataType::kUInt32;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64: return DataType::kUInt64;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64: return DataType::kComplex64;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128: return DataType::kComplex128;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return DataType::kBFloat16;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN: return DataType::kFloat8E4M3FN;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ: return DataType::kFloat8E4M3FNUZ;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2: return DataType::kFloat8E5M2;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ: return DataType::kFloat8E5M2FNUZ;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4: return DataType::kUInt4;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4: return DataType::kInt4;
    }
    return std::nullopt;  // a type newer than our header (the library may be newer)
}

std::optional<ONNXTensorElementDataType> dtype_to_ort(DataType dtype) {
    switch (dtype) {
        case DataType::kUndefined: return std::nullopt;
        case DataType::kFloat32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
        case DataType::kFloat64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
        case DataType::kFloat16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
        case DataType::kBFloat16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
        case DataType::kInt8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
        case DataType::kInt16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
        case DataType::kInt32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
        case DataType::kInt64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
        case DataType::kUInt8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
        case DataType::kUInt16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
        case DataType::kUInt32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32;
        case DataType::kUInt64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64;
        case DataType::kBool: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
        case DataType::kString: return ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING;
        case DataType::kComplex64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64;
        case DataType::kComplex128: return ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128;
        case DataType::kFloat8E4M3FN: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN;
        case DataType::kFloat8E4M3FNUZ: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ;
        case DataType::kFloat8E5M2: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2;
        case DataType::kFloat8E5M2FNUZ: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ;
        case DataType::kUInt4: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4;
        case DataType::kInt4: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4;
    }
    return std::nullopt;
}

}  // namespace detail
}  // namespace polygraphy::onnxrt

#endif  // POLYGRAPHY_HAVE_ONNXRUNTIME
