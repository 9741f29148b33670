// RunJob: one plain description of what `polygraphy run` does. The argument groups of `run` fill one
// in, run_job() executes it, and job_program() (polygraphy/job/script.h) prints it as a C++ program.
//
//     RunJob job;
//     job.model = ModelJob{"model.onnx"};
//     job.model->steps.push_back(ModifyOutputsStep{kMarkAll});
//     job.runners = {RefRunnerStep{}, OnnxrtRunnerStep{}};
//     job.compare.simple.atol.set("", 1e-4);
//     const RunJobResult result = run_job(job);   // result.passed, result.accuracy, result.divergence
//
// Built-in steps are data (structs in a std::variant), so a job can be inspected, stored or handed to
// another process; the executor and the printer each visit every alternative, so a step kind one of
// them forgets does not compile. An extension module's runner is a CustomRunnerStep: code that builds
// the runner, plus optional code that prints it.
//
// Adding to `run`: a field (or a step alternative) here, its branch in run_job() (src/job/run_job.cpp)
// and in job_program() (src/job/program.cpp), and the argument group that fills it (the reports of
// CompareJob are such fields). Where the features still to come fit: runners in child processes can ship their
// RunnerStep and the ModelJob, which are plain data (a CustomRunnerStep cannot cross a process boundary); language
// bindings map these structs one to one; a bounded-memory layer-wise comparison is another way of
// executing the same description (how the model is held is decided in one place, see run_job()).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "polygraphy/backend/base/runner.h"
#include "polygraphy/backend/onnx/graph.h"
#include "polygraphy/backend/onnx/loader.h"
#include "polygraphy/backend/onnxrt/loader.h"
#include "polygraphy/backend/ref/runner.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/comparator/comparator.h"
#include "polygraphy/comparator/divergence.h"

namespace polygraphy {

class Script;

// ---- the model -----------------------------------------------------------------------------------

/// infer_shapes() (`--shape-inference`; `--force-fallback-shape-inference` sets force_fallback).
struct InferShapesStep {
    bool force_fallback = false;  ///< infer with the built-in runtime instead of ONNX shape inference
};

/// ModifyOutputs (`--onnx-outputs`, `--onnx-exclude-outputs`).
struct ModifyOutputsStep {
    std::vector<std::string> outputs = {};          ///< empty: keep the model's; kMarkAll: every tensor
    std::vector<std::string> exclude_outputs = {};  ///< then unmarked
};

/// convert_to_fp16() (`--fp-to-fp16`, `--fp-to-bf16`, the block lists).
struct ConvertToFp16Step {
    Fp16Options options = {};  ///< the target type and the block lists
};

/// Saves the model and passes it on (`--save-onnx`, `--save-external-data`).
struct SaveOnnxStep {
    std::string path = {};  ///< its folder must exist
    /// Weights go to an external file (save_onnx_with_external_data) when set.
    std::optional<ExternalDataOptions> external_data = std::nullopt;
};

/// One step of a model's loader chain.
using ModelStep = std::variant<InferShapesStep, ModifyOutputsStep, ConvertToFp16Step, SaveOnnxStep>;

/// An ONNX model: the file, where its external data is, and the steps applied to it after loading.
struct ModelJob {
    std::string path = {};  ///< the model file
    std::optional<std::string> external_data_dir =
        std::nullopt;                   ///< `--external-data-dir`; default: the model's folder
    bool ignore_external_data = false;  ///< `--ignore-external-data`
    std::vector<ModelStep> steps = {};  ///< applied in order
};

/// The loader chain of `model`: OnnxFromPath, then each step. Lazy; every call loads the model again.
OnnxLoader build_model_loader(const ModelJob& model);

/// Applies one step to a loaded model, as build_model_loader() does (ModifyOutputs may replace it).
void apply_model_step(OnnxModel& model, const ModelStep& step);

/// SaveOnnxStep on its own: writes `model` atomically, creating missing folders. PolygraphyException
/// when the model is over 2 GiB without external data.
void save_model(const onnx::ModelProto& model, const SaveOnnxStep& step);

/// The model file itself when the job uses it unchanged: no steps and no external-data options. A
/// runtime that reads ONNX files itself (ONNX-Runtime) then takes the file, as Polygraphy's ORT runner
/// does. Its external data references are checked first as OnnxFromPath checks them (from the
/// file's structure; throws what OnnxFromPath throws for a bad one). Else nullopt.
std::optional<std::string> unmodified_model_path(const ModelJob& model);

// ---- the runners ---------------------------------------------------------------------------------

/// ref::RefRunner over ref::SessionFromOnnx (`--ref`, `--ref-threads`, `--ref-no-fusion`, `--ref-profile`).
struct RefRunnerStep {
    ref::SessionOptions options = {};  ///< the built-in runtime's settings
    /// `--ref-precision float64`: the runner computes a copy of the model converted to float64
    /// (convert_to_fp16() with DataType::kFloat64), a reference truer than any float32 backend.
    DataType precision = DataType::kFloat32;
};

/// onnxrt::OnnxrtRunner over onnxrt::SessionFromOnnx (`--onnxrt` and its session options). Takes the
/// model file itself when unmodified_model_path() gives one.
struct OnnxrtRunnerStep {
    onnxrt::SessionOptions options = {};  ///< the session's settings
};

/// A runner an extension module adds (RunnerArgGroup::runner_step()): what it builds, and how it is
/// printed.
struct CustomRunnerStep {
    /// Builds a new runner. `model` loads the job's model and gives this runner its own copy, which it
    /// may modify; calling it without a model in the job is a UsageError. Required.
    std::function<std::unique_ptr<BaseRunner>(const OnnxLoader& model)> build = {};
    /// Writes what the runner needs into `script` (includes, loaders) and returns a C++ expression
    /// yielding a std::unique_ptr<BaseRunner>. `model` names the program's variable holding the job's
    /// model loader ("" when the job has no model); the program shares that model, so printed code
    /// must not modify it. Empty (the default): the runner cannot be printed, and `--gen-script`
    /// refuses command lines that select it.
    std::function<std::string(Script& script, const std::string& model)> print = {};
};

/// One runner of a job.
using RunnerStep = std::variant<RefRunnerStep, OnnxrtRunnerStep, CustomRunnerStep>;

/// Builds the runner of `step` over `model` (which may be empty for a CustomRunnerStep that needs
/// none). `model_file`, when set, is handed to ONNX-Runtime instead of the loaded model. ONNX-Runtime
/// is loaded here, so a missing library is reported before any runner starts.
std::unique_ptr<BaseRunner> build_runner(const RunnerStep& step, const OnnxLoader& model,
                                         const std::optional<std::string>& model_file = std::nullopt);

// ---- data, inference, comparison -----------------------------------------------------------------

/// One shard of a dataset (`--shard I/N`): every `count`-th sample, starting at `index`. A stride
/// rather than a contiguous range: shards then differ in size by one sample at most and get equal
/// shares of a dataset sorted by length or difficulty, and the split needs no sample count up front
/// (a generator's length is known only at its end).
struct DatasetShard {
    std::size_t index = 0;  ///< which shard, from 0
    std::size_t count = 1;  ///< how many shards
};

/// Where the inputs come from.
struct DataLoaderJob {
    /// The seeded generator's settings (`--seed`, `--iterations`, `--val-range`, `--input-shapes`,
    /// `--int-min/--int-max/--float-min/--float-max`).
    DataLoader::Options generator = {};
    /// `--load-inputs`: when not empty, these files' feeds, concatenated in order, instead of generated data.
    std::vector<std::string> load_inputs_paths = {};
    /// A loader the caller supplies (`--data-loader-script`); when set, it is used instead of the above.
    /// A printed program cannot hold it.
    DataLoaderFn custom = {};
    /// The model of the command line: ONNX test data of `load_inputs_paths` is read with its graph, so
    /// that unnamed values pair with its inputs by position (load_saved_inputs()).
    std::optional<std::string> model_path = std::nullopt;
    /// `--shard`: only this shard's samples are run (every sample is still read, see
    /// shard_data_loader()); nullopt: all of them.
    std::optional<DatasetShard> shard = std::nullopt;
};

/// The data loader `data` describes, restricted to its shard when it has one. Input files are read
/// now (PolygraphyException when unreadable). `tally`, when given, receives what the loader saw of
/// the whole dataset once it is read to its end (shard_data_loader()).
DataLoaderFn build_data_loader(const DataLoaderJob& data, std::shared_ptr<DatasetTally> tally = nullptr);

/// How results are compared.
struct CompareJob {
    /// The comparison function (`--compare`).
    enum class Function { kSimple, kIndices };
    Function function = Function::kSimple;    ///< which function compares
    SimpleCompareOptions simple = {};         ///< kSimple's options; its fail_fast is taken from `fail_fast`
    PerOutput<int64_t> index_tolerance = {};  ///< kIndices' tolerances (`--index-tolerance`)
    bool fail_fast = false;                   ///< stop at the first failure (`--fail-fast`)
    /// `--report`: per-tensor figures and the first divergence, as an HTML page (a path ending in .html
    /// or .htm, see is_html_report_path(); set simple.collect_distributions for its histograms) or JSON.
    /// A report is written even when the comparison cannot complete (e.g. no common outputs): it says
    /// why, and the error is thrown after it.
    std::optional<std::string> report_path = std::nullopt;
    /// The command line an HTML report shows ("" when the job was made through the API).
    std::string report_command = {};
    /// `--suggest-tolerances [PASS_RATE]`: log each pair's suggest_tolerances() for this element pass
    /// rate after the comparison (below 1, `simple.error_quantile` must be the rate).
    std::optional<double> suggest_tolerances = std::nullopt;
    /// `--model-explorer-node-data`: the first pair's errors at iteration 0 as Model Explorer node data.
    std::optional<std::string> model_explorer_path = std::nullopt;
    /// `--save-summary`: the dataset summary (polygraphy/comparator/dataset_summary.h) of the run's
    /// samples, which `data merge` adds up across shards: per output (per layer with `mark all`), each
    /// sample's verdict and figures, fixed-bin error histograms, each sample's first divergence, and
    /// the fingerprints of the model, the dataset and these options. Sets
    /// simple.collect_error_histograms for the run.
    std::optional<std::string> summary_path = std::nullopt;
    /// `--compare-memory-budget`: the most bytes the runners' outputs, and the tensors kept between
    /// slices, may take at once in a layer-wise run (see run_job()); nullopt: the size of the model's
    /// weights, at least kDefaultCompareMemoryBudget.
    std::optional<std::size_t> memory_budget = std::nullopt;
    /// `--session-memory-budget`: the most weights one ONNX-Runtime session may hold (it copies them
    /// into its own memory). A model whose weights exceed it, compared by two runners or more, runs in
    /// slices of nodes whose weights fit (see run_job()); nullopt: a quarter of the machine's memory
    /// (default_session_memory_budget()).
    std::optional<std::size_t> session_memory_budget = std::nullopt;
    /// A function the caller supplies (`--compare-func-script`); when set, it compares instead of
    /// `function`. A printed program cannot hold it.
    CompareFunc custom = {};
};

/// The default of CompareJob::session_memory_budget: a quarter of the machine's physical memory, so
/// that one runner's session of a slice, the other's, and the tensors between them fit together.
std::size_t default_session_memory_budget();

/// The smallest default of CompareJob::memory_budget (256 MiB).
inline constexpr std::size_t kDefaultCompareMemoryBudget = std::size_t{256} << 20;

/// compare_func::simple or compare_func::indices with `compare`'s settings.
CompareFunc build_compare_func(const CompareJob& compare);

/// Logging that a printed program sets up; run_job() leaves the process's logger as its caller set it.
struct LoggingJob {
    Severity severity = Severity::kInfo;                 ///< `-v`, `-q`, `--verbosity`, `--silent`
    std::optional<std::string> log_file = std::nullopt;  ///< `--log-file`
};

/// Everything `polygraphy run` does, as data.
struct RunJob {
    std::optional<ModelJob> model = std::nullopt;                 ///< nullopt: no model (saved results are compared)
    std::vector<RunnerStep> runners = {};                         ///< run in this order (command-line order)
    DataLoaderJob data_loader = {};                               ///< the runners' inputs
    Comparator::RunOptions inference = {};                        ///< `--warm-up`, `--save-inputs`
    std::optional<std::string> save_outputs_path = std::nullopt;  ///< `--save-outputs`: the runners' raw results
    std::vector<std::string> load_outputs_paths = {};  ///< `--load-outputs`: appended after the runners' results
    PerOutput<TopK> postprocess =
        {};                   ///< `--postprocess`; empty: none. Applied to every result after saving and loading
    CompareJob compare = {};  ///< comparison settings
    bool validate = false;    ///< `--validate`: check every output for NaN and Inf
    LoggingJob logging = {};  ///< for printed programs
};

/// What run_job() found.
struct RunJobResult {
    bool passed = true;  ///< every comparison and validation passed (`run` exits with 0 exactly then)
    /// The runners' results, then the loaded ones, post-processed (empty after a run in slices).
    RunResults results = {};
    std::optional<AccuracyResult> accuracy = std::nullopt;  ///< set when results were compared
    std::optional<Divergence> divergence = std::nullopt;    ///< the first node whose output diverged, when one failed
};

/// Whether `job` compares results: two or more runners, or loaded results.
bool job_compares(const RunJob& job);

/// Executes `job`: builds the runners (all before any runs), runs them over the data loader with
/// Comparator::run (when there are runners), saves their results, appends the loaded ones,
/// post-processes everything, compares consecutive results when job_compares(), looks for the first
/// divergence in the job's model when a comparison failed, writes the reports, validates.
///
/// The model is loaded once and shared by the runners and the divergence search whenever more than
/// one of them uses it (so shape inference, fp16 conversion and `--save-onnx` happen once); it is then
/// kept in memory until the job ends.
///
/// Layer-wise runs in bounded memory: when the job re-marks the model's outputs (ModifyOutputsStep,
/// e.g. `mark all`) and compares two or more runners without saving or loading results, the sizes of
/// the model's tensors are estimated (infer_output_metadata() for the first feed's shapes). When every
/// runner's outputs for every iteration do not fit CompareJob::memory_budget, the graph is cut into
/// slices of nodes in topological order (plan_graph_slices()) that fit with the tensors later slices
/// read: each runner runs each slice as a model of its own (SliceView: the weights are moved, not
/// copied), fed with the "cut" tensors of its own earlier slices, so every node runs once. Each slice
/// is compared (SlicedComparison), post-processed and validated, then freed. The comparison's
/// verdicts and figures are those of one run over all outputs (save where a runtime optimizes a
/// slice's session differently, as ONNX-Runtime's layout optimizations may); RunJobResult::results
/// is then empty. A budget the user gave that is too small for one node is a UsageError (a default
/// one grows). A terminal shows the progress (Logger::progress()).
///
/// Models larger than a session: when an ONNX-Runtime runner is among two runners or more (and no
/// results are saved to JSON or loaded) and the model's weights exceed
/// CompareJob::session_memory_budget, the same slices run with each slice's weights within that
/// budget too: each runner builds a session of each slice, runs it and releases it before the next,
/// so no session holds the whole model. Only the job's outputs are compared; the cut tensors pass
/// from slice to slice. ONNX-Runtime optimizes each slice on its own (as in a layer-wise run in
/// slices).
///
/// An HTML report's graph is that model; when no runner loaded it
/// and no divergence was searched, the report reads the model file's structure alone
/// (onnx_structure_from_path: no weights, no loader steps). Throws PolygraphyException for anything that fails to run
/// (a failed comparison is not an exception: see RunJobResult::passed).
RunJobResult run_job(const RunJob& job);

/// The runners of `job`, in order, as run_job() builds them (sharing one loaded model).
std::vector<std::unique_ptr<BaseRunner>> build_runners(const RunJob& job);

}  // namespace polygraphy
