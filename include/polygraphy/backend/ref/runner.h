// RefRunner: runs ONNX models on the built-in CPU runtime (`polygraphy run --ref`).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polygraphy/backend/base/runner.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/ref/kernel.h"

namespace polygraphy::ref {

class Session;

/// Options of the built-in runtime.
struct SessionOptions {
    int num_threads = 0;  ///< 0: per run, the cores other processes leave idle (at least 1); negative values are rejected
    /// Fold Relu, Clip, SiLU and GELU into the Conv/ConvTranspose (or float MatMul/Gemm) feeding
    /// them, and a Linear layer's bias Add into its MatMul, when nothing else reads the intermediate
    /// output (never for graph outputs, so layer-wise runs see every layer). Faster; a folded Relu or
    /// Clip maps NaN to 0 (or Clip's lower bound), as ONNX Runtime's fused kernels do (README,
    /// Precision). False runs every node as written.
    bool fuse_activations = true;
    /// Time every node of every run (Session::profile(); `--ref-profile`). Costs two clock reads per
    /// node.
    bool profile = false;
    /// Serve each run's large buffers from one block planned from the run before (RunArena), so
    /// repeated runs do not fault in fresh pages. False: every buffer from malloc.
    bool plan_buffers = true;
    /// The widest channel block the layout pass may keep activations in between convolutions
    /// (README, Precision): 0 picks 16 where oneDNN runs AVX-512 kernels and 8 elsewhere; 8 or 16
    /// sets it (16 on a CPU without AVX-512 runs oneDNN's slower generic kernels). Other values are
    /// rejected.
    int max_channel_block = 0;
};

/// Where the time of a session's runs went (SessionOptions::profile).
struct SessionProfile {
    /// One node that runs.
    struct Node {
        std::string name;     ///< display name (as in Session::execution_order())
        std::string op_type;  ///< the operator, with "+Relu" etc. when a graph pass folded an activation in
        double seconds = 0;   ///< total over the counted runs
        /// Floating-point operations of a product (MatMul, Gemm, Conv and their fused and quantized
        /// forms: 2 per multiply-add), total over the counted runs; 0 for other operators.
        double flops = 0;
    };
    /// Runs counted. The first run of a session is not: it creates the kernels' primitives.
    std::size_t runs = 0;
    /// Every node that runs, in execution order.
    std::vector<Node> nodes;
    /// Wall time of the counted runs (nodes plus the session's own work between them).
    double total_seconds = 0;
    /// Threads the last counted run used.
    int threads = 1;
    /// This machine's float32 limit, one core: oneDNN's sgemm on 512 x 512 x 512 at 1 thread, measured
    /// once per process when a profile is first read (or POLYGRAPHY_SGEMM_PEAK_GFLOPS when set).
    double peak_gflops = 0;
};

/// The profile as a text table: time per run by op type, then the `max_nodes` slowest nodes, with the
/// GFLOP/s of each product and its share of the peak (`peak_gflops` times the threads).
std::string format_profile(const SessionProfile& profile, std::size_t max_nodes = 25);

/// Counters of one Session::run (for tests and diagnostics).
struct RunStats {
    /// Nodes run (folded Constant nodes excluded).
    std::size_t nodes_executed = 0;
    /// Most node outputs alive at once: intermediates are released right after their last consumer.
    std::size_t peak_live_intermediates = 0;
    /// Concat nodes whose producers wrote their inputs into the Concat's output, so that it copied
    /// nothing (with buffer planning, from the second run on).
    std::size_t concats_in_place = 0;
};

/// A prepared graph: topologically ordered nodes with their kernels, initializers as tensors, and
/// the point after which each intermediate buffer is released. Preparing checks the whole model
/// first: nodes that do not fit their operators (MalformedNodeError, node_check.h), cycles, node
/// inputs that nothing produces, and every unsupported operator (reported by
/// node name, op type, domain and opset) before anything runs. Constant nodes are evaluated while
/// preparing. The session copies what it needs: `model` may be destroyed afterwards.
class Session {
public:
    /// Prepares `model` (see the class); ModelError/UnsupportedError for what cannot run.
    /// `constants`: values the top-level graph reads without defining them, taken as initializers
    /// that are already decoded (GraphEvaluator::prepare: constant folding hands its values so).
    explicit Session(const onnx::ModelProto& model, SessionOptions options = {}, const TensorMap& constants = {});
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    /// Graph inputs that are not initializers (initializers listed as inputs are defaults the feed
    /// may override), with their declared dtypes and shapes.
    const TensorMetadata& input_metadata() const;
    /// Graph outputs with their declared dtypes and shapes.
    const TensorMetadata& output_metadata() const;
    /// Runs the graph; returns the graph outputs in graph order (outputs that are graph inputs or
    /// initializers included). Dtypes and shapes of the feed are not validated here
    /// (BaseRunner::infer does that); an input missing from the feed is an InputError, a kernel
    /// failure a ModelError "Node '<name>' (<op>): ...". Safe to call from several threads at once.
    TensorMap run(const TensorMap& feed) const;
    /// Same, and fills `stats` (when not null). A graph output that is a sequence or an empty
    /// optional is an UnsupportedError here: use run_values().
    TensorMap run(const TensorMap& feed, RunStats* stats) const;

    /// Inputs and outputs that may be sequences or optionals (ONNX test data with SequenceProto /
    /// OptionalProto values); otherwise the same as run().
    using ValueMap = OrderedMap<Value>;
    /// run() for feeds and results that may hold sequences or optionals.
    ValueMap run_values(const ValueMap& feed, RunStats* stats = nullptr) const;

    /// Display names of the nodes that run, in execution order (Constant nodes are folded at
    /// preparation and do not appear).
    const std::vector<std::string>& execution_order() const;
    /// Threads kernels use (SessionOptions::num_threads, or the machine's cores when it is 0, of which
    /// each run uses those other processes leave idle).
    int num_threads() const;
    /// Per-node times of the runs so far; nullopt unless SessionOptions::profile was set.
    std::optional<SessionProfile> profile() const;

    /// Implementation (also prepares the subgraphs of If/Loop/Scan/SequenceMap nodes).
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

/// Loader that builds a Session from an ONNX model loader (Polygraphy's SessionFromOnnx pattern).
class SessionFromOnnx {
public:
    /// Loader of a Session over `model`'s result.
    explicit SessionFromOnnx(OnnxLoader model, SessionOptions options = {})
        : model_(std::move(model)), options_(options) {}
    /// Loads the model and prepares the session.
    std::shared_ptr<Session> operator()() const;

private:
    OnnxLoader model_;
    SessionOptions options_;
};

/// Immediately evaluated SessionFromOnnx: `session_from_onnx(*onnx_from_path("m.onnx"))`.
std::shared_ptr<Session> session_from_onnx(const onnx::ModelProto& model, SessionOptions options = {});

/// Runner over a Session. The session is built in activate() and released in deactivate(), which
/// first logs its profile (format_profile(), at info severity) when the session was profiling.
class RefRunner : public BaseRunner {
public:
    /// Runner over any session loader; `name` as in BaseRunner.
    explicit RefRunner(Loader<std::shared_ptr<Session>> session, std::optional<std::string> name = std::nullopt);

protected:
    void activate_impl() override;
    void deactivate_impl() override;
    TensorMetadata get_input_metadata_impl() override;
    TensorMap infer_impl(const TensorMap& feed) override;

private:
    Loader<std::shared_ptr<Session>> session_loader_;
    std::shared_ptr<Session> session_;
};

}  // namespace polygraphy::ref
