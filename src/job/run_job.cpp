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
#include "polygraphy/comparator/dataset_summary.h"
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
                   [&](const ConvertToFp16Step& convert) { convert_to_fp16(*model, convert.options); },
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
            // A model larger than a session runs in slices of the loaded model (layerwise.cpp).
            if (use.onnxrt_file && session_split_budget(job)) use.onnxrt_file.reset();
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
                if (ref.precision == DataType::kFloat64)
                    return std::make_unique<ref::RefRunner>(ref::SessionFromOnnx(
                        extend(model,
                               [](OnnxModel& shared) {
                                   auto copy = std::make_shared<onnx::ModelProto>(*shared);
                                   convert_to_fp16(*copy, Fp16Options{.target = DataType::kFloat64});
                                   return copy;
                               }),
                        ref.options));
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

DataLoaderFn build_data_loader(const DataLoaderJob& data, std::shared_ptr<DatasetTally> tally) {
    DataLoaderFn loader;
    if (data.custom) {
        loader = data.custom;
    } else if (data.load_inputs_paths.empty()) {
        loader = DataLoader(data.generator).as_function();
    } else {
        InputList feeds;
        for (const auto& path : data.load_inputs_paths) {
            InputList loaded = load_saved_inputs(path, data.model_path);
            feeds.insert(feeds.end(), std::make_move_iterator(loaded.begin()), std::make_move_iterator(loaded.end()));
        }
        loader = data_loader_from_list(std::move(feeds));
    }
    if (!data.shard && !tally) return loader;
    const DatasetShard shard = data.shard.value_or(DatasetShard{});
    return shard_data_loader(std::move(loader), shard.index, shard.count, std::move(tally));
}

CompareFunc build_compare_func(const CompareJob& compare) {
    if (compare.custom) return compare.custom;
    if (compare.function == CompareJob::Function::kIndices)
        return compare_func::indices(compare.index_tolerance, compare.fail_fast);
    SimpleCompareOptions options = compare.simple;
    options.fail_fast = compare.fail_fast;
    if (compare.summary_path) options.collect_error_histograms = true;
    return compare_func::simple(std::move(options));
}

bool job_compares(const RunJob& job) {
    return job.runners.size() > 1 || !job.load_outputs_paths.empty();
}

RunJobResult run_job(const RunJob& job) {
    const ModelUse use = job_detail::plan_model_use(job);
    const OnnxLoader model = job_detail::job_model(job, use);
    const std::vector<std::unique_ptr<BaseRunner>> runners = job_detail::build_job_runners(job, use, model);
    job_detail::SavedOutputs saved(job);
    const auto save = [&saved](const std::string& runner, std::size_t index, const IterationResult& result) {
        saved.add(runner, index, result);
    };

    // A layer-wise run whose outputs do not fit the memory budget at once runs, compares and
    // validates slice by slice (may_run_in_slices: its saved outputs are an .npz, which streams).
    // What the data loader sees of the whole dataset, for the summary's fingerprint.
    const auto tally = job.compare.summary_path ? std::make_shared<DatasetTally>() : nullptr;
    if (const std::optional<job_detail::SlicePlan> plan = job_detail::plan_layerwise_run(job, model, tally)) {
        job_detail::SliceOutputSink sink;
        if (saved.streams()) sink = save;
        job_detail::SlicedRun sliced = job_detail::run_in_slices(job, runners, *model(), *plan, sink);
        saved.finish(RunResults{});
        return job_detail::finish_run_job(job, RunResults{}, job_detail::sliced_run_verdicts(sliced), model, false,
                                          tally.get());
    }
    // Called without runners too (--load-outputs alone), as Polygraphy's script does: it warns.
    std::vector<BaseRunner*> runner_pointers;
    for (const auto& runner : runners) runner_pointers.push_back(runner.get());
    Comparator::IterationCallback save_iteration;
    if (saved.streams()) save_iteration = save;
    RunResults results =
        Comparator::run(runner_pointers, build_data_loader(job.data_loader, tally), job.inference, save_iteration);
    saved.finish(results);
    return job_detail::finish_run_job(job, std::move(results), job_detail::whole_run_verdicts(job), model, false,
                                      tally.get());
}

// ---- the tail of a run ---------------------------------------------------------------------------

job_detail::SavedOutputs::SavedOutputs(const RunJob& job)
    : path_(job.save_outputs_path), streams_(path_ && npz::is_npz_path(*path_)) {}

void job_detail::SavedOutputs::add(const std::string& runner, std::size_t iteration, const IterationResult& result) {
    if (!streams_) throw InternalError("SavedOutputs::add called for outputs that do not stream");
    if (!streamed_) streamed_.emplace(*path_);
    for (const auto& [name, tensor] : result.outputs) streamed_->add_output(runner, iteration, name, tensor);
    std::optional<double>& runtime = runtimes_[{runner, iteration}];
    if (result.runtime) runtime = runtime.value_or(0.0) + *result.runtime;
    streamed_->set_iteration_info(runner, iteration, runtime, result.runner_name);
}

void job_detail::SavedOutputs::finish(const RunResults& results) {
    if (!path_) return;
    if (!streamed_) {  // JSON, or results that arrived whole (runner processes)
        results.save(*path_);
        return;
    }
    logger().info("Saving inference results to " + *path_);
    streamed_->finish();
}

job_detail::RunVerdicts job_detail::whole_run_verdicts(const RunJob& job) {
    RunVerdicts verdicts;
    verdicts.complete = [&job](RunResults& results) {
        for (const auto& path : job.load_outputs_paths)
            results.extend(load_saved_results(path, job.model ? std::optional(job.model->path) : std::nullopt));
        // As Polygraphy: after saving (saved outputs are the raw ones) and loading (loaded ones are
        // post-processed too), before comparing and validating.
        if (job.postprocess.empty()) return;
        // The lines Polygraphy's Comparator.postprocess logs, naming its top-k function.
        logger().start(std::string(kApplyingTopK));
        Comparator::postprocess(results, postprocess_func::top_k(job.postprocess));
        logger().finish(std::string(kFinishedPostprocessing));
    };
    verdicts.compare = [&job](const RunResults& results) {
        return Comparator::compare_accuracy(results, build_compare_func(job.compare), job.compare.fail_fast);
    };
    verdicts.validate = [](const RunResults& results) { return Comparator::validate(results, true, true); };
    return verdicts;
}

job_detail::RunVerdicts job_detail::sliced_run_verdicts(SlicedRun& sliced) {
    RunVerdicts verdicts;
    verdicts.complete = [](RunResults&) {};
    verdicts.compare = [&sliced](const RunResults&) { return std::move(sliced.accuracy); };
    verdicts.validate = [&sliced](const RunResults&) { return sliced.valid; };
    return verdicts;
}

RunJobResult job_detail::finish_run_job(const RunJob& job, RunResults results, const RunVerdicts& verdicts,
                                        const OnnxLoader& model, bool runners_failed, const DatasetTally* tally) {
    RunJobResult outcome;
    outcome.results = std::move(results);
    verdicts.complete(outcome.results);

    if (job_compares(job)) {
        AccuracyResult accuracy;
        std::exception_ptr comparison_failure;  // rethrown once the report has said why
        std::string comparison_error;
        try {
            accuracy = verdicts.compare(outcome.results);
        } catch (const PolygraphyException& error) {
            if (!job.compare.report_path) throw;
            comparison_failure = std::current_exception();
            comparison_error = error.what();
        }
        outcome.passed = static_cast<bool>(accuracy);
        if (job.compare.suggest_tolerances)
            for (const auto& pair : accuracy.pairs)
                logger().info(format_suggested_tolerances(
                    pair, suggest_tolerances(pair, *job.compare.suggest_tolerances), *job.compare.suggest_tolerances));
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
        if (job.compare.summary_path) {
            job_detail::save_run_summary(job, accuracy, model, tally);
            logger().info("Saving dataset summary to " + *job.compare.summary_path);
        }
        if (job.compare.model_explorer_path) {
            save_model_explorer_node_data(accuracy, *job.compare.model_explorer_path);
            logger().info("Saving Model Explorer node data to " + *job.compare.model_explorer_path);
        }
        outcome.accuracy = std::move(accuracy);
    }
    if (job.validate) outcome.passed = verdicts.validate(outcome.results) && outcome.passed;
    if (runners_failed) outcome.passed = false;
    return outcome;
}

}  // namespace polygraphy
