// Internal: the dlopen'ed ONNX-Runtime C API, RAII handles, status checks and dtype mapping.
// Only compiled when the C API header was found (POLYGRAPHY_HAVE_ONNXRUNTIME).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <onnxruntime_c_api.h>

#include "polygraphy/common/datatype.h"

namespace polygraphy::onnxrt::detail {

/// The API table of the process-wide library; loads it on first use (throws like load_library()).
const OrtApi& api();

/// The process-wide environment, created on first use with a logger that forwards ONNX-Runtime's
/// messages to polygraphy's logger. Never released: ONNX-Runtime's global state must outlive every
/// session, and tearing it down during static destruction races with other static destructors.
OrtEnv* env();

/// The most detailed ONNX-Runtime log level polygraphy's logger currently shows.
OrtLoggingLevel log_level();

// ---- RAII: every Ort* handle is owned by a unique_ptr whose deleter calls the matching Release ----
#define POLYGRAPHY_ORT_HANDLE(Type, Release)                       \
    struct Type##Deleter {                                         \
        void operator()(Ort##Type* handle) const noexcept {        \
            if (handle) api().Release(handle);                     \
        }                                                          \
    };                                                             \
    using Type##Ptr = std::unique_ptr<Ort##Type, Type##Deleter>;

POLYGRAPHY_ORT_HANDLE(Status, ReleaseStatus)
POLYGRAPHY_ORT_HANDLE(Session, ReleaseSession)
POLYGRAPHY_ORT_HANDLE(SessionOptions, ReleaseSessionOptions)
POLYGRAPHY_ORT_HANDLE(Value, ReleaseValue)
POLYGRAPHY_ORT_HANDLE(TypeInfo, ReleaseTypeInfo)
POLYGRAPHY_ORT_HANDLE(TensorTypeAndShapeInfo, ReleaseTensorTypeAndShapeInfo)
POLYGRAPHY_ORT_HANDLE(MemoryInfo, ReleaseMemoryInfo)
POLYGRAPHY_ORT_HANDLE(CUDAProviderOptionsV2, ReleaseCUDAProviderOptions)
POLYGRAPHY_ORT_HANDLE(TensorRTProviderOptionsV2, ReleaseTensorRTProviderOptions)
#undef POLYGRAPHY_ORT_HANDLE

/// Which exception a failed call turns into.
enum class ErrorKind {
    kGeneric,  ///< PolygraphyException
    kModel,    ///< ModelError (ONNX-Runtime refuses the model), except missing files
    kInput,    ///< InputError for invalid arguments (inputs ONNX-Runtime rejects)
};

/// Takes ownership of `status`; when it is an error, throws "<context>: <ONNX-Runtime message>" on
/// one line, typed by `kind`.
void check(OrtStatus* status, std::string_view context, ErrorKind kind = ErrorKind::kGeneric);

/// Collapses a multi-line message into one line (whitespace runs become one space).
std::string one_line(std::string_view message);

/// ONNX-Runtime element type -> DataType; nullopt for types polygraphy does not know.
std::optional<DataType> dtype_from_ort(ONNXTensorElementDataType type);
/// DataType -> ONNX-Runtime element type; nullopt for kUndefined.
std::optional<ONNXTensorElementDataType> dtype_to_ort(DataType dtype);

}  // namespace polygraphy::onnxrt::detail
