// `run --save-summary`: the dataset summary of a run (or of one shard of it), with what identifies
// the run, so that `data merge` adds up the shards of one run and refuses anything else.
#include <fmt/format.h>

#include <filesystem>

#include "backend/onnx/structure_unlogged.h"
#include "common/hash.h"
#include "job/job_internal.h"
#include "polygraphy/backend/onnx/structure.h"
#include "polygraphy/comparator/dataset_summary.h"
#include "polygraphy/job/script.h"

namespace polygraphy::job_detail {
namespace {

// The graph without its weights' values, the size of its file and where its weights lie: reading
// every weight of a multi-GB model in every shard would cost more than the shard itself.
std::string model_fingerprint(const RunJob& job) {
    Hasher hasher;
    if (!job.model) {
        hasher.add("no model");
        return hasher.hex();
    }
    const OnnxModel structure = onnx_structure_from_path_unlogged(job.model->path);
    hasher.add(structure->SerializeAsString());
    std::error_code error;
    const auto size = std::filesystem::file_size(job.model->path, error);
    hasher.add_number(error ? 0 : static_cast<uint64_t>(size));
    return hasher.hex();
}

// The job as a program (job_program()), without what differs between the shards of one run or
// names where it writes: the shard, the summary, the reports, the saved data and the log.
std::string options_fingerprint(const RunJob& job) {
    RunJob shared = job;
    shared.data_loader.shard.reset();
    shared.compare.summary_path.reset();
    shared.compare.report_path.reset();
    shared.compare.report_command.clear();
    shared.compare.model_explorer_path.reset();
    shared.save_outputs_path.reset();
    shared.inference.save_inputs_path.reset();
    shared.logging.log_file.reset();
    Hasher hasher;
    try {
        hasher.add(job_program(shared));
    } catch (const PolygraphyException&) {
        // A job a program cannot print (an extension's runner, a data loader script): the kinds of
        // its runners and the comparison function.
        for (const auto& runner : job.runners) hasher.add_number(runner.index());
        hasher.add(fmt::format("{} {}", static_cast<int>(job.compare.function), job.compare.fail_fast));
    }
    return hasher.hex();
}

// Reads the whole dataset again when the run's own loader did not reach its end.
DatasetTally complete_tally(const RunJob& job, const DatasetTally* tally) {
    if (tally && tally->complete) return *tally;
    DataLoaderJob whole = job.data_loader;
    whole.shard.reset();
    auto fresh = std::make_shared<DatasetTally>();
    const DataLoaderFn loader = build_data_loader(whole, fresh);
    TensorMetadata inputs;
    if (job.model) inputs = get_onnx_input_metadata(onnx_structure_from_path_unlogged(job.model->path)->graph());
    for (std::size_t i = 0; loader(i, inputs); ++i) {
    }
    return *fresh;
}

}  // namespace

void save_run_summary(const RunJob& job, const AccuracyResult& accuracy, const OnnxLoader& model,
                      const DatasetTally* tally) {
    const DatasetShard shard = job.data_loader.shard.value_or(DatasetShard{});
    const DatasetTally dataset = complete_tally(job, tally);

    DatasetSummary summary;
    summary.model_fingerprint = model_fingerprint(job);
    summary.dataset_fingerprint = dataset.fingerprint;
    summary.options_fingerprint = options_fingerprint(job);
    summary.dataset_samples = dataset.samples;
    summary.shard_count = shard.count;
    summary.shards = {shard.index};
    summary.samples = shard_samples(shard.index, shard.count, dataset.samples);

    // The graph in which each failing sample's first divergence is looked for: the model in memory
    // when the runners loaded it, else its structure alone.
    OnnxModel graph_model;
    auto graph = [&]() -> const onnx::GraphProto& {
        if (!graph_model)
            graph_model = plan_model_use(job).loaded_by_runners ? model() : onnx_structure_from_path(job.model->path);
        return graph_model->graph();
    };
    for (const auto& pair : accuracy.pairs) {
        if (pair.iterations.size() != summary.samples.size())
            throw PolygraphyException(fmt::format(
                "Cannot save a dataset summary: {} vs. {} compared {} sample(s), but shard {} of {} of the dataset "
                "holds {}",
                pair.first_runner, pair.second_runner, pair.iterations.size(), shard.index, shard.count,
                summary.samples.size()));
        PairDatasetSummary part;
        part.first_runner = runner_name_without_time(pair.first_runner);
        part.second_runner = runner_name_without_time(pair.second_runner);
        part.outputs = summarize_dataset(pair, SampleIndexing{shard.index, shard.count});
        for (std::size_t iteration = 0; iteration < pair.iterations.size() && job.model; ++iteration) {
            bool failed = false;
            for (const auto& [name, result] : pair.iterations[iteration]) failed = failed || !result.passed;
            if (!failed) continue;
            if (const auto divergence = find_first_divergence(graph(), pair.iterations[iteration]))
                part.first_divergences.push_back(SampleDivergence{summary.samples[iteration], divergence->node_name,
                                                                  divergence->op_type, divergence->tensor,
                                                                  divergence->figures.max_absdiff});
        }
        summary.pairs.push_back(std::move(part));
    }
    save_dataset_summary(summary, *job.compare.summary_path);
}

}  // namespace polygraphy::job_detail
