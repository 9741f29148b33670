// ONNX-Runtime sessions (`polygraphy run --onnxrt`): the library, SessionFromOnnx and Session.
//
// ONNX-Runtime is not linked: its shared library is opened with dlopen the first time a session is
// built, so every other feature works without it. Search order (the first found is used):
//   1. $POLYGRAPHY_ONNXRUNTIME_LIB when set (and then only that path);
//   2. the copy installed with libpolygraphy: <folder of libpolygraphy.so>/polygraphy/onnxruntime/
//      (cmake --install and the .deb bundle the library the build used), when it exists;
//   3. the build tree's copy installed by scripts/setup_onnxruntime.sh (<repo>/.deps/onnxruntime/lib);
//   4. the system's "libonnxruntime.so.1" (the dynamic loader's search path).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polygraphy/backend/base/loader.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/common/tensor.h"
#include "polygraphy/common/tensor_metadata.h"

namespace polygraphy::onnxrt {

/// The loaded ONNX-Runtime library.
struct LibraryInfo {
    std::string path;     ///< as given to dlopen
    std::string version;  ///< GetVersionString(), e.g. "1.30.0"
};

/// True when this build has the ONNX-Runtime backend (the C API header was found at configure time).
bool built_with_onnxruntime();

/// Loads ONNX-Runtime once per process (thread-safe) and returns what was loaded. Throws
/// UnsupportedError when the backend was not built, PolygraphyException (one line listing every path
/// tried and how to install the library) when no usable library is found: missing, not ONNX-Runtime
/// (no OrtGetApiBase), or older than the C API this build was compiled against. A failure is not
/// cached: a later call searches again.
const LibraryInfo& load_library();

/// True when load_library() succeeds; never throws. `reason` receives the error message otherwise.
bool is_available(std::string* reason = nullptr);

/// Searches and opens the library exactly like load_library(), reading the environment now, but
/// without caching or using the process-wide copy. For diagnostics and tests.
LibraryInfo probe_library();

/// The paths load_library() tries, in order (reads $POLYGRAPHY_ONNXRUNTIME_LIB now).
std::vector<std::string> library_search_paths();

/// Execution providers the loaded library offers, in ONNX-Runtime's priority order
/// (e.g. {"CPUExecutionProvider"}). Loads the library.
std::vector<std::string> available_providers();

/// Matches requested provider names against `available` the way Polygraphy does: an exact match,
/// else the first available name that contains the request (or is contained in it), ignoring case
/// ("cpu" -> "CPUExecutionProvider"). Throws PolygraphyException naming the request and listing the
/// available providers when one does not match.
std::vector<std::string> resolve_providers(const std::vector<std::string>& requested,
                                           const std::vector<std::string>& available);

enum class GraphOptimizationLevel { kDisableAll, kBasic, kExtended, kAll };
enum class ExecutionMode { kSequential, kParallel };

/// "disable", "basic", "extended", "all" (the names the CLI accepts); nullopt otherwise.
std::optional<GraphOptimizationLevel> graph_optimization_level_from_name(const std::string& name);
std::optional<ExecutionMode> execution_mode_from_name(const std::string& name);

/// Settings of an ONNX-Runtime session (`--providers`, `--onnxrt-*` options).
struct SessionOptions {
    /// In priority order; each resolved with resolve_providers(). ONNX-Runtime always adds its CPU
    /// provider last as a fallback.
    std::vector<std::string> providers = {"cpu"};
    int intra_op_num_threads = 0;  ///< 0: ONNX-Runtime's default (one per physical core)
    int inter_op_num_threads = 0;  ///< 0: ONNX-Runtime's default; used only in kParallel mode
    /// ONNX-Runtime's graph optimizations (`--onnxrt-graph-optimization-level`).
    GraphOptimizationLevel graph_optimization_level = GraphOptimizationLevel::kAll;
    /// Sequential or parallel operator execution (`--onnxrt-execution-mode`).
    ExecutionMode execution_mode = ExecutionMode::kSequential;
    /// Where ONNX-Runtime saves the graph it runs, after its optimizations at graph_optimization_level
    /// (`--onnxrt-save-optimized-model`; its FusedConv, FusedMatMul, ... nodes run on `--ref` too).
    /// Missing folders are created. None: nothing is saved.
    std::optional<std::string> optimized_model_path;
    /// ONNX-Runtime custom-op libraries loaded into the session, in order (`--onnxrt-custom-op-libs`;
    /// RegisterCustomOpsLibrary_V2: each exports RegisterCustomOps). A path that does not exist, or a
    /// library ONNX-Runtime cannot register, is a PolygraphyException naming it.
    std::vector<std::string> custom_op_libraries;
};

/// An ONNX-Runtime inference session (an OrtSession and what is needed to run it).
/// Thread-safe: run() may be called concurrently.
class Session {
public:
    /// Backend state (opaque to users).
    struct Impl;
    /// Wraps a created session (SessionFromOnnx and the session_from_* functions create them).
    explicit Session(std::unique_ptr<Impl> impl);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    /// Declared inputs / outputs: names, dtypes (nullopt for non-tensor values) and shapes, with
    /// dynamic dims as their symbolic names ('batch') or unknown.
    const TensorMetadata& input_metadata() const;
    /// Declared outputs, like input_metadata().
    const TensorMetadata& output_metadata() const;
    /// Providers the session was created with, after matching (e.g. {"CPUExecutionProvider"}).
    const std::vector<std::string>& providers() const;

    /// Runs the session on `feed` (name -> tensor; inputs are wrapped without copies, except strings
    /// and int4/uint4 which ONNX-Runtime stores differently) and returns every output, in the
    /// session's output order, copied into new tensors. Inputs ONNX-Runtime rejects (unknown names,
    /// wrong dtype or shape) -> InputError with its message; other run failures -> PolygraphyException.
    /// `run_seconds`, when given, receives the time spent in ONNX-Runtime's Run call alone.
    TensorMap run(const TensorMap& feed, double* run_seconds = nullptr) const;

    /// Backend state, for the runner's implementation.
    Impl& impl() const { return *impl_; }

private:
    std::unique_ptr<Impl> impl_;
};

/// Loader that builds a Session (Polygraphy's SessionFromOnnx). The model may come from an ONNX
/// loader chain, from serialized bytes, or from a file path that ONNX-Runtime reads itself (with its
/// external data). A model from a loader is handed over without serializing its weights, so models
/// of any size work: ONNX-Runtime receives the graph alone, reads the weights of checked external
/// references (see OnnxFromPath) from their folder itself, as it would from the model's path, and
/// gets the initializers held in memory (1 KiB or more) as values to copy. Logs "Creating ONNX-Runtime
/// Inference Session with providers: [...]". Models ONNX-Runtime refuses -> ModelError with its message
/// on one line.
class SessionFromOnnx {
public:
    /// Session from an ONNX model loader (handed over as the class says).
    explicit SessionFromOnnx(OnnxLoader model, SessionOptions options = {});
    /// Session from serialized model bytes.
    static SessionFromOnnx from_bytes(Loader<std::string> model_bytes, SessionOptions options = {});
    /// Session from a model file that ONNX-Runtime reads itself (with its external data).
    static SessionFromOnnx from_path(std::string model_path, SessionOptions options = {});

    /// Loads the library and creates the session.
    std::shared_ptr<Session> operator()() const;

    /// The session options.
    const SessionOptions& options() const { return options_; }

private:
    SessionFromOnnx(OnnxLoader model, Loader<std::string> bytes, std::optional<std::string> path,
                    SessionOptions options);

    OnnxLoader model_;                 ///< set when building from a model loader
    Loader<std::string> bytes_;        ///< set when building from bytes
    std::optional<std::string> path_;  ///< set when ONNX-Runtime reads the file itself
    SessionOptions options_;
};

/// Immediately evaluated SessionFromOnnx (a model in memory, handed over as SessionFromOnnx says).
std::shared_ptr<Session> session_from_onnx(const onnx::ModelProto& model, const SessionOptions& options = {});
/// Immediately evaluated SessionFromOnnx::from_path.
std::shared_ptr<Session> session_from_path(const std::string& model_path, const SessionOptions& options = {});

}  // namespace polygraphy::onnxrt
