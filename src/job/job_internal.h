// Internal to the job layer: what the executor (run_job.cpp) and the printer (program.cpp) decide alike.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polygraphy/job/run_job.h"

namespace polygraphy::job_detail {

/// A visitor made of lambdas, one per alternative of a step variant: std::visit rejects a visitor
/// that misses one, so the executor and the printer cannot drift apart on the kinds of steps.
template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

/// How a job's model reaches its users: the runners that take the loaded model and the divergence
/// search. Decided once, the same way, for running the job and for printing it.
struct ModelUse {
    /// unmodified_model_path() when an ONNX-Runtime runner may take the file itself.
    std::optional<std::string> onnxrt_file;
    /// Two or more users: the model is loaded once and shared.
    bool shared = false;
    /// At least one user (the printer writes the loader chain only then).
    bool needed = false;
};
ModelUse plan_model_use(const RunJob& job);

/// The job's model loader as planned by `use` (shared when several users load it).
OnnxLoader job_model(const RunJob& job, const ModelUse& use);
/// The job's runners, all built before any runs, over `model`.
std::vector<std::unique_ptr<BaseRunner>> build_job_runners(const RunJob& job, const ModelUse& use,
                                                           const OnnxLoader& model);
/// What run_job() does once the runners' results are in, however they were obtained: save them,
/// append the loaded ones, post-process, compare (the divergence search loads `model`), validate.
/// `runners_failed` makes the result fail whatever the comparisons say.
RunJobResult finish_run_job(const RunJob& job, RunResults results, const OnnxLoader& model, bool runners_failed);

/// The lines Polygraphy's Comparator.postprocess logs around --postprocess (its top-k function is
/// named top_k_impl); scripts grep them.
inline constexpr const char* kApplyingTopK = "Applying post-processing to outputs: top_k_impl";
inline constexpr const char* kFinishedPostprocessing = "Finished applying post-processing";

}  // namespace polygraphy::job_detail
