// Internal to the job layer: what the executor (run_job.cpp) and the printer (program.cpp) decide alike.
#pragma once

#include <stdlib.h>  // mkdtemp

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polygraphy/backend/onnx/slices.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/npz.h"
#include "polygraphy/job/run_job.h"

namespace polygraphy::job_detail {

/// A fresh folder under the system's temporary folder, removed with everything in it on every path.
/// PolygraphyException naming the temporary folder when it cannot be created.
class ScratchFolder {
public:
    explicit ScratchFolder(const std::string& prefix) {
        std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
        if (!::mkdtemp(pattern.data()))
            throw PolygraphyException("Could not create a temporary folder under " +
                                      std::filesystem::temp_directory_path().string());
        path_ = pattern;
    }
    ~ScratchFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    ScratchFolder(const ScratchFolder&) = delete;
    ScratchFolder& operator=(const ScratchFolder&) = delete;
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

/// A visitor made of lambdas, one per alternative of a step variant: std::visit rejects a visitor
/// that misses one, so the executor and the printer cannot drift apart on the kinds of steps.
template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

/// How a job's model reaches its users: the runners that take the loaded model, the divergence
/// search and an HTML report's graph. Decided once, the same way, for running the job and for
/// printing it.
struct ModelUse {
    /// unmodified_model_path() when an ONNX-Runtime runner may take the file itself.
    std::optional<std::string> onnxrt_file;
    /// Two or more users: the model is loaded once and shared.
    bool shared = false;
    /// At least one user (the printer writes the loader chain only then).
    bool needed = false;
    /// A runner takes the loaded model: once the runners ran, it is in memory, and the report's
    /// graph is that model. Otherwise the report reads the file's structure unless the divergence
    /// search loaded the model.
    bool loaded_by_runners = false;
};
ModelUse plan_model_use(const RunJob& job);

/// The job writes an HTML report of a comparison of a model: the report shows the model's graph.
bool report_needs_graph(const RunJob& job);

// ---- layer-wise runs in bounded memory (layerwise.cpp) -------------------------------------------

/// A size for log lines: "1.5 MiB".
std::string size_text(std::size_t bytes);

/// The session memory budget (CompareJob::session_memory_budget or its default) when the job's model
/// is larger than an ONNX-Runtime session and the job may run in slices for it (an ONNX-Runtime
/// runner among two or more; results neither saved to JSON nor loaded); else nullopt. Reads the
/// model file's structure, not its weights.
std::optional<std::size_t> session_split_budget(const RunJob& job);

/// Bytes of the model's initializers, from their types and dims (wherever their data lives).
std::size_t weight_bytes(const onnx::ModelProto& model);

/// Estimated bytes of every tensor that a node produces or the graph yields, for `feed`'s input
/// shapes (tensors whose size shape inference cannot tell are left out).
std::unordered_map<std::string, std::size_t> tensor_bytes(onnx::ModelProto& model, const TensorMap& feed);

/// How the cut inputs of `slice` are declared: each tensor's dtype, and its dims where every runner
/// and iteration of `kept` (the cut tensors, by runner then iteration) agree (a dim left unknown otherwise).
std::unordered_map<std::string, onnx::ValueInfoProto> cut_input_types(const GraphSlice& slice,
                                                                      const std::vector<std::vector<TensorMap>>& kept);

/// The slices of a layer-wise run of a graph whose outputs are the tensors to compare: `bytes` are
/// the estimated sizes of its tensors (plan_graph_slices()), each slice held `copies` times must fit
/// `budget`. When one node alone does not fit: a UsageError naming it if the user gave the budget
/// (`budget_given`), else the budget grows to what that node needs (said in an info line).
/// `session_budget`, when set, bounds each slice's weights too (a model larger than a session).
std::vector<GraphSlice> plan_model_slices(const onnx::GraphProto& graph,
                                          const std::unordered_map<std::string, std::size_t>& bytes, std::size_t copies,
                                          std::size_t budget, bool budget_given,
                                          std::optional<std::size_t> session_budget = std::nullopt);

/// The size of each initializer of `graph` (from its dims and type; string tensors count 0).
std::unordered_map<std::string, std::size_t> initializer_bytes(const onnx::GraphProto& graph);

/// Gives the node outputs of `graph` missing from `bytes` (shape inference could not tell their size,
/// e.g. after a Reshape to a computed shape) the size of their largest input that is not a weight
/// (inputs sized from `feed`), as most such nodes (Reshape, Transpose, elementwise ops) keep it.
/// Outputs of nodes that read only weights stay missing. Returns how many were estimated.
std::size_t estimate_unknown_sizes(const onnx::GraphProto& graph, const TensorMap& feed,
                                   std::unordered_map<std::string, std::size_t>& bytes);

/// Whether `job` may run in slices: it re-marks the model's outputs (ModifyOutputsStep) and compares
/// two or more runners without saving or loading results (which hold every output at once).
bool may_run_in_slices(const RunJob& job);

/// What a layer-wise run needs beyond the job: the slices and the feeds.
struct SlicePlan {
    std::vector<GraphSlice> slices;  ///< two or more
    InputList feeds;                 ///< the model's inputs, one per iteration, from the job's data loader
    /// Set when the slices bound the weights of each runner's session (a model larger than a
    /// session: session_split_budget()).
    std::optional<std::size_t> session_budget = std::nullopt;
};

/// The slices of a layer-wise run of `job` (see run_job()), or of a run whose model is larger than a
/// session (session_split_budget()), or nullopt when neither applies or the outputs fit the budget
/// at once. `model` is the job's shared
/// model loader (called here: the model is loaded now).
std::optional<SlicePlan> plan_layerwise_run(const RunJob& job, const OnnxLoader& model,
                                            std::shared_ptr<DatasetTally> tally = nullptr);

/// What a layer-wise run found.
struct SlicedRun {
    AccuracyResult accuracy;  ///< every slice's comparison, merged
    bool valid = true;        ///< `--validate` found no NaN or Inf
};

/// Receives each runner's result of one slice and iteration (the slice's marked outputs, raw, and
/// the slice's runtime), before they are compared: SavedOutputs::add.
using SliceOutputSink =
    std::function<void(const std::string& runner_name, std::size_t iteration, const IterationResult& result)>;

/// The one writer of `--save-outputs`, fed by every way a run gets its results (in one process, in
/// slices, in runner processes). An .npz is written as results arrive, each iteration whole or slice
/// by slice (an iteration's runtime is then the sum of its slices'), and holds no tensor; JSON nests
/// every runner's iterations, and results that arrive whole (runner processes) are whole already, so
/// finish() writes those from the whole results. Without the option it writes nothing.
class SavedOutputs {
public:
    explicit SavedOutputs(const RunJob& job);
    /// Whether add() may write (an .npz); otherwise finish() writes everything from the whole results.
    bool streams() const { return streams_; }
    /// One runner's result of an iteration, or of one slice of it, as it arrives (only when streams()).
    void add(const std::string& runner, std::size_t iteration, const IterationResult& result);
    /// Writes what is left: the whole `results` as JSON, or the .npz's index.
    void finish(const RunResults& results);

private:
    std::optional<std::string> path_;
    bool streams_ = false;
    std::optional<npz::ResultsWriter> streamed_;  // opened by the first add()
    std::map<std::pair<std::string, std::size_t>, std::optional<double>> runtimes_;
};

/// Runs `runners` once per slice of `plan` on `model` (the loaded model the runners' loaders return:
/// it shows each slice in turn (SliceView), and is restored), comparing, post-processing and
/// validating each slice as run_job() does the whole results. Each runner's slices are fed with the
/// cut tensors of its own earlier slices. `sink`, when given, sees every slice's outputs.
SlicedRun run_in_slices(const RunJob& job, const std::vector<std::unique_ptr<BaseRunner>>& runners,
                        onnx::ModelProto& model, const SlicePlan& plan, const SliceOutputSink& sink = {});
/// The job's model loader as planned by `use` (shared when several users load it).
OnnxLoader job_model(const RunJob& job, const ModelUse& use);
/// The job's runners, all built before any runs, over `model`.
std::vector<std::unique_ptr<BaseRunner>> build_job_runners(const RunJob& job, const ModelUse& use,
                                                           const OnnxLoader& model);
/// How the tail of a run gets its comparison and validation: from the whole results, or as a run in
/// slices found them slice by slice. The tail calls each at the point of its log lines.
struct RunVerdicts {
    /// The loaded results appended, then post-processed (--postprocess): nothing for a run in slices,
    /// which post-processes each slice.
    std::function<void(RunResults& results)> complete;
    std::function<AccuracyResult(const RunResults& results)> compare;
    std::function<bool(const RunResults& results)> validate;
};
/// The verdicts of a run whose results are whole.
RunVerdicts whole_run_verdicts(const RunJob& job);
/// The verdicts a run in slices found (`sliced` must outlive them; compare() moves its result out).
RunVerdicts sliced_run_verdicts(SlicedRun& sliced);

/// What run_job() does once the runners' results are in, however they were obtained, and saved
/// (SavedOutputs): complete them, compare (the divergence search loads `model`), report, validate,
/// through `verdicts`. `runners_failed` makes the result fail whatever the comparisons say.
RunJobResult finish_run_job(const RunJob& job, RunResults results, const RunVerdicts& verdicts, const OnnxLoader& model,
                            bool runners_failed, const DatasetTally* tally = nullptr);

/// `--save-summary`: the dataset summary of `accuracy` (samples numbered by the job's shard), with
/// each failing sample's first divergence in the job's model and the run's fingerprints. `tally` is
/// what the run's data loader saw of the whole dataset; when it is missing or incomplete (runners in
/// processes of their own), the data loader is read again here.
void save_run_summary(const RunJob& job, const AccuracyResult& accuracy, const OnnxLoader& model,
                      const DatasetTally* tally);

/// The lines Polygraphy's Comparator.postprocess logs around --postprocess (its top-k function is
/// named top_k_impl); scripts grep them.
inline constexpr const char* kApplyingTopK = "Applying post-processing to outputs: top_k_impl";
inline constexpr const char* kFinishedPostprocessing = "Finished applying post-processing";

}  // namespace polygraphy::job_detail
