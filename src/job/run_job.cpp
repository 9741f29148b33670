// The executor of a RunJob: the one place where `polygraphy run` does its work.
#include "polygraphy/job/run_job.h"

#include <exception>
#include <filesystem>
#include <iterator>
#include <map>

#include "job/job_internal.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/backend/onnxrt/runner.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/npz.h"
#include "polygraphy/comparator/html_report.h"
#include "polygraphy/comparator/model_explorer.h"
#include "polygraphy/job/saved_data.h"

namespace polygraphy {

using job_detail::ModelUse;
using job_detail::Overloaded;

// ---- the model -----------------------------------------------------------------------------------

void save_model(const onnx::ModelProto& model, const SaveOnnxStep& step) {
    // A missing output folder is created (by the atomic writer), as Polygraphy and the JSON outputs do.
    if (step.external_data)
        save_onnx_with_external_data(model, step.path, *step.external_data);
    else
        save_onnx(model, step.path);
}

void apply_model_step(OnnxModel& model, const ModelStep& step) {
    std::visit(Overloaded{
                   [&](const InferShapesStep& infer) { infer_shapes(*model, infer.force_fallback); },
                   [&](const ModifyOutputsStep& modify) {
                       model = modify_outputs(std::move(model), modify.outputs, modify.exclude_outputs);
                   },
                   [&](const ConvertToFp16Step&) { convert_to_fp16(*model); },
                   [&](const SaveOnnxStep& save) { save_model(*model, save); },
               },
               step);
}

OnnxLoader build_model_loader(const ModelJob& model) {
    OnnxLoader loader = OnnxFromPath(model.path, model.external_data_dir, model.ignore_external_data);
    for (const ModelStep& step : model.steps)
        loader = extend(std::move(loader), [step](OnnxModel& loaded) { apply_model_step(loaded, step); });
    return loader;
}

std::optional<std::string> unmodified_model_path(const ModelJob& model) {
    if (!model.steps.empty() || model.external_data_dir || model.ignore_external_data) return std::nullopt;
    // The checks of OnnxFromPath (locations inside the folder, files long enough), on the structure
    // alone, before ONNX-Runtime reads the file and its external data itself.
    if (onnx_file_may_use_external_data(model.path)) check_onnx_file_external_data(model.path);
    return model.path;
}

bool job_detail::report_needs_graph(const RunJob& job) {
    return job.model && job_compares(job) && job.compare.report_path && is_html_report_path(*job.compare.report_path);
}

job_detail::ModelUse job_detail::plan_model_use(const RunJob& job) {
    ModelUse use;
    int users = job.model && job_compares(job) ? 1 : 0;  // the divergence search
    if (report_needs_graph(job)) ++users;
    bool file_checked = false;
    for (const RunnerStep& step : job.runners) {
        if (std::holds_alternative<OnnxrtRunnerStep>(step) && job.model && !file_checked) {
            use.onnxrt_file = unmodified_model_path(*job.model);
            file_checked = true;
        }
        const bool takes_file = std::holds_alternative<OnnxrtRunnerStep>(step) && use.onnxrt_file;
        if (!takes_file) {
            ++users;
            use.loaded_by_runners = true;
        }
    }
    use.shared = users > 1;
    use.needed = users > 0;
    return use;
}

OnnxLoader job_detail::job_model(const RunJob& job, const ModelUse& use) {
    if (!job.model)
        return []() -> OnnxModel { throw UsageError("An ONNX model is required, but no model file was provided"); };
    OnnxLoader chain = build_model_loader(*job.model);
    return use.shared ? load_once(std::move(chain)) : chain;
}

std::vector<std::unique_ptr<BaseRunner>> job_detail::build_job_runners(const RunJob& job, const ModelUse& use,
                                                                       const OnnxLoader& model) {
    // An extension module's runner may modify its model: it gets a copy of a shared one.
    const OnnxLoader private_copy =
        !use.shared ? model
                    : OnnxLoader([model]() -> OnnxModel { return std::make_shared<onnx::ModelProto>(*model()); });
    std::vector<std::unique_ptr<BaseRunner>> runners;
    for (const RunnerStep& step : job.runners) {
        const bool custom = std::holds_alternative<CustomRunnerStep>(step);
        runners.push_back(build_runner(step, custom ? private_copy : model, use.onnxrt_file));
    }
    return runners;
}

// ---- the runners ---------------------------------------------------------------------------------

std::unique_ptr<BaseRunner> build_runner(const RunnerStep& step, const OnnxLoader& model,
                                         const std::optional<std::string>& model_file) {
    const auto needs_model = [&](const char* runner) {
        if (!model) throw InternalError(std::string("build_runner: the ") + runner + " runner needs a model loader");
    };
    std::unique_ptr<BaseRunner> runner = std::visit(
        Overloaded{
            [&](const RefRunnerStep& ref) -> std::unique_ptr<BaseRunner> {
                needs_model("built-in runtime");
                return std::make_unique<ref::RefRunner>(ref::SessionFromOnnx(model, ref.options));
            },
            [&](const OnnxrtRunnerStep& onnxrt) -> std::unique_ptr<BaseRunner> {
                onnxrt::load_library();  // report a missing ONNX-Runtime before any runner starts
                if (model_file)
                    return std::make_unique<onnxrt::OnnxrtRunner>(
                        onnxrt::SessionFromOnnx::from_path(*model_file, onnxrt.options));
                needs_model("ONNX-Runtime");
                return std::make_unique<onnxrt::OnnxrtRunner>(onnxrt::SessionFromOnnx(model, onnxrt.options));
            },
            [&](const CustomRunnerStep& custom) -> std::unique_ptr<BaseRunner> {
                if (!custom.build) throw InternalError("an extension module's runner step has no build function");
                return custom.build(model);
            },
        },
        step);
    if (!runner) throw InternalError("an extension module's runner step built no runner");
    return runner;
}

std::vector<std::unique_ptr<BaseRunner>> build_runners(const RunJob& job) {
    const ModelUse use = job_detail::plan_model_use(job);
    return job_detail::build_job_runners(job, use, job_detail::job_model(job, use));
}

// ---- data, inference, comparison -----------------------------------------------------------------

DataLoaderFn build_data_loader(const DataLoaderJob& data) {
    if (data.custom) return data.custom;
    if (data.load_inputs_paths.empty()) return DataLoader(data.generator).as_function();
    InputList feeds;
    for (const auto& path : data.load_inputs_paths) {
        InputList loaded = load_saved_inputs(path);
        feeds.insert(feeds.end(), std::make_move_iterator(loaded.begin()), std::make_move_iterator(loaded.end()));
    }
    return data_loader_from_list(std::move(feeds));
}

CompareFunc build_compare_func(const CompareJob& compare) {
    if (compare.custom) return compare.custom;
    if (compare.function == CompareJob::Function::kIndices)
        return compare_func::indices(compare.index_tolerance, compare.fail_fast);
    SimpleCompareOptions options = compare.simple;
    options.fail_fast = compare.fail_fast;
    return compare_func::simple(std::move(options));
}

bool job_compares(const RunJob& job) {
    return job.runners.size() > 1 || !job.load_outputs_paths.empty();
}

RunJobResult run_job(const RunJob& job) {
    const ModelUse use = job_detail::plan_model_use(job);
    const OnnxLoader model = job_detail::job_model(job, use);
    const std::vector<std::unique_ptr<BaseRunner>> runners = job_detail::build_job_runners(job, use, model);

    // A layer-wise run whose outputs do not fit the memory budget at once runs, compares and
    // validates slice by slice.
    if (const std::optional<job_detail::SlicePlan> plan = job_detail::plan_layerwise_run(job, model)) {
        // Saved outputs (an .npz: may_run_in_slices refuses JSON) are written slice by slice and freed
        // with the slice; an iteration's runtime is the sum of its slices'.
        std::optional<npz::ResultsWriter> streamed;
        std::map<std::pair<std::string, std::size_t>, double> runtimes;
        job_detail::SliceOutputSink save_slice;
        if (job.save_outputs_path) {
            streamed.emplace(*job.save_outputs_path);
            save_slice = [&](const std::string& runner, std::size_t index, const IterationResult& result) {
                for (const auto& [name, tensor] : result.outputs) streamed->add_output(runner, index, name, tensor);
                double& runtime = runtimes[{runner, index}];
                runtime += result.runtime.value_or(0.0);
                streamed->set_iteration_info(runner, index, runtime, result.runner_name);
            };
        }
        job_detail::SlicedRun sliced = job_detail::run_in_slices(job, runners, *model(), *plan, save_slice);
        if (streamed) {
            logger().info("Saving inference results to " + *job.save_outputs_path);
            streamed->finish();
        }
        return job_detail::finish_run_job(job, RunResults{}, model, false, &sliced);
    }
    // Called without runners too (--load-outputs alone), as Polygraphy's script does: it warns.
    std::vector<BaseRunner*> runner_pointers;
    for (const auto& runner : runners) runner_pointers.push_back(runner.get());
    // An .npz is written as each iteration of each runner finishes; the writer keeps no tensor (the
    // comparison that follows still needs them in `results`). JSON nests every runner's iterations,
    // so it is written once all are in, streamed from `results` without a second copy.
    std::optional<npz::ResultsWriter> streamed;
    Comparator::IterationCallback save_iteration;
    if (job.save_outputs_path && npz::is_npz_path(*job.save_outputs_path)) {
        streamed.emplace(*job.save_outputs_path);
        save_iteration = [&streamed](const std::string& runner, std::size_t index, const IterationResult& result) {
            streamed->add_iteration(runner, index, result);
        };
    }
    RunResults results =
        Comparator::run(runner_pointers, build_data_loader(job.data_loader), job.inference, save_iteration);
    if (streamed) {
        logger().info("Saving inference results to " + *job.save_outputs_path);
        streamed->finish();
    } else if (job.save_outputs_path) {
        results.save(*job.save_outputs_path);
    }
    return job_detail::finish_run_job(job, std::move(results), model, false);
}

RunJobResult job_detail::finish_run_job(const RunJob& job, RunResults results, const OnnxLoader& model,
                                        bool runners_failed, SlicedRun* sliced) {
    RunJobResult outcome;
    outcome.results = std::move(results);
    for (const auto& path : job.load_outputs_paths) outcome.results.extend(load_saved_results(path));
    // As Polygraphy: after the caller saved them (saved outputs are the raw ones) and loading (loaded ones are
    // post-processed too), before comparing and validating.
    if (!job.postprocess.empty() && !sliced) {
        // The lines Polygraphy's Comparator.postprocess logs, naming its top-k function.
        logger().start(std::string(job_detail::kApplyingTopK));
        Comparator::postprocess(outcome.results, postprocess_func::top_k(job.postprocess));
        logger().finish(std::string(job_detail::kFinishedPostprocessing));
    }

    if (job_compares(job)) {
        AccuracyResult accuracy;
        std::exception_ptr comparison_failure;  // rethrown once the report has said why
        std::string comparison_error;
        try {
            accuracy = sliced ? std::move(sliced->accuracy)
                              : Comparator::compare_accuracy(outcome.results, build_compare_func(job.compare),
                                                             job.compare.fail_fast);
        } catch (const PolygraphyException& error) {
            if (!job.compare.report_path) throw;
            comparison_failure = std::current_exception();
            comparison_error = error.what();
        }
        outcome.passed = static_cast<bool>(accuracy);
        // Beyond Polygraphy: name the node where the runners started to disagree, so nobody has to
        // read hundreds of per-layer comparisons (most useful with --onnx-outputs mark all).
        if (!accuracy && job.model) {
            outcome.divergence = find_first_divergence(model()->graph(), accuracy);
            if (outcome.divergence) logger().error(describe_divergence(*outcome.divergence));
        }
        if (job.compare.report_path) {
            ReportContext context;
            if (job.model) context.title = std::filesystem::path(job.model->path).filename().string();
            context.command = job.compare.report_command;
            context.error = comparison_error;
            OnnxModel graph_model;
            if (job_detail::report_needs_graph(job)) {
                // The model in memory (shared: loading it again costs nothing), else its structure alone.
                const bool loaded = job_detail::plan_model_use(job).loaded_by_runners || !accuracy;
                graph_model = loaded ? model() : onnx_structure_from_path(job.model->path);
                context.graph = &graph_model->graph();
            }
            save_comparison_report(accuracy, outcome.divergence, context, *job.compare.report_path);
            logger().info("Saving accuracy report to " + *job.compare.report_path);
        }
        if (comparison_failure) std::rethrow_exception(comparison_failure);
        if (job.compare.model_explorer_path) {
            save_model_explorer_node_data(accuracy, *job.compare.model_explorer_path);
            logger().info("Saving Model Explorer node data to " + *job.compare.model_explorer_path);
        }
        outcome.accuracy = std::move(accuracy);
    }
    if (job.validate)
        outcome.passed = (sliced ? sliced->valid : Comparator::validate(outcome.results, true, true)) && outcome.passed;
    if (runners_failed) outcome.passed = false;
    return outcome;
}

}  // namespace polygraphy
