// --use-subprocess (runner_processes.h): the parent starts a process per runner and reads their
// results back; a runner process runs one runner and writes its results.
#include "polygraphy/job/runner_processes.h"

#include <unistd.h>
#include <cstdlib>
#include <filesystem>

#include "common/subprocess.h"
#include "job/job_internal.h"
#include "polygraphy/common/exception.h"
#include "polygraphy/common/logger.h"
#include "polygraphy/common/run_results.h"

namespace polygraphy {
namespace {

// How much of a failed runner process's output its error shows.
constexpr std::size_t kTailLines = 20;

struct RunnerProcessTask {
    std::size_t index = 0;
    std::string results_path;
};

// kRunnerProcessVariable's "<index>:<results file>".
RunnerProcessTask parse_task(const char* value) {
    const std::string text = value ? value : "";
    const auto colon = text.find(':');
    RunnerProcessTask task;
    bool valid = colon != std::string::npos && colon > 0 && colon + 1 < text.size();
    for (std::size_t i = 0; valid && i < colon; ++i) valid = text[i] >= '0' && text[i] <= '9';
    if (!valid)
        throw UsageError(std::string(kRunnerProcessVariable) + " must be <runner index>:<results file>, but is '" +
                         text + "'");
    task.index = static_cast<std::size_t>(std::stoull(text.substr(0, colon)));
    task.results_path = text.substr(colon + 1);
    return task;
}

// The last `count` lines of `text`, each indented for a Note.
std::string last_lines(const std::string& text, std::size_t count) {
    std::size_t start = text.size();
    while (start > 0 && text[start - 1] == '\n') --start;
    const std::size_t end = start;
    for (std::size_t found = 0; start > 0 && found < count; --start)
        if (text[start - 1] == '\n' && ++found == count) break;
    return text.substr(start, end - start);
}

// The results a runner process left, or why there are none.
std::optional<RunResults> read_results(const std::string& path, std::string& problem) {
    if (!std::filesystem::exists(path)) {
        problem = "it wrote no results";
        return std::nullopt;
    }
    try {
        auto loaded = load_run_results_or_inputs(path);
        if (auto* results = std::get_if<RunResults>(&loaded); results && results->size() == 1)
            return std::move(*results);
        problem = "its results file holds something other than one runner's results";
    } catch (const PolygraphyException& error) {
        problem = std::string("its results could not be read: ") + error.what();
    }
    return std::nullopt;
}

}  // namespace

bool is_runner_process() {
    return std::getenv(kRunnerProcessVariable) != nullptr;
}

RunJobResult run_job_in_processes(const RunJob& job, const RunnerProcessOptions& options) {
    if (job.runners.empty()) return run_job(job);
    if (options.command.empty()) throw UsageError("run_job_in_processes: the command that starts a runner is empty");

    job_detail::ScratchFolder scratch("polygraphy-runners");
    RunResults results;
    bool runners_failed = false;
    for (std::size_t index = 0; index < job.runners.size(); ++index) {
        const std::string results_path = scratch.file("runner" + std::to_string(index) + ".json");
        const ProcessResult process =
            run_process(options.command, options.timeout_seconds, std::size_t{64} << 20,
                        {std::string(kRunnerProcessVariable) + "=" + std::to_string(index) + ":" + results_path});
        std::string problem;
        std::optional<RunResults> runner_results;
        if (process.timed_out || process.returncode != 0)
            problem = "its process ended with " + process.describe();
        else
            runner_results = read_results(results_path, problem);
        if (runner_results) {
            // The runner's own log, as it would have appeared in one process (it is already formatted).
            std::fwrite(process.stdout_text.data(), 1, process.stdout_text.size(), stdout);
            std::fflush(stdout);
            std::fwrite(process.stderr_text.data(), 1, process.stderr_text.size(), stderr);
            results.extend(std::move(*runner_results));
            continue;
        }
        runners_failed = true;
        std::string message = "Runner " + std::to_string(index + 1) + " of " + std::to_string(job.runners.size()) +
                              " failed in its own process: " + problem + ". The other runners' results are compared";
        std::string printed = process.stdout_text;
        if (!printed.empty() && printed.back() != '\n') printed += '\n';
        const std::string tail = last_lines(printed + process.stderr_text, kTailLines);
        if (!tail.empty()) message += "\nNote: the last lines it printed were:\n" + tail;
        logger().error(message);
    }
    job_detail::SavedOutputs(job).finish(results);  // the processes' results arrive whole
    const job_detail::ModelUse use = job_detail::plan_model_use(job);
    return job_detail::finish_run_job(job, std::move(results), job_detail::whole_run_verdicts(job),
                                      job_detail::job_model(job, use), runners_failed);
}

void run_runner_process(const RunJob& job) {
    if (!is_runner_process())
        throw UsageError(std::string("run_runner_process: this is not a runner process (") + kRunnerProcessVariable +
                         " is not set)");
    const RunnerProcessTask task = parse_task(std::getenv(kRunnerProcessVariable));
    if (task.index >= job.runners.size())
        throw UsageError(std::string(kRunnerProcessVariable) + " names runner " + std::to_string(task.index) +
                         ", but the job has " + std::to_string(job.runners.size()) + " runner(s)");
    const job_detail::ModelUse use = job_detail::plan_model_use(job);
    const OnnxLoader model = job_detail::job_model(job, use);
    const std::vector<std::unique_ptr<BaseRunner>> runners = job_detail::build_job_runners(job, use, model);
    Comparator::RunOptions inference = job.inference;
    if (task.index != 0) inference.save_inputs_path.reset();  // the inputs are the same in every process
    const RunResults results =
        Comparator::run({runners[task.index].get()}, build_data_loader(job.data_loader), inference);
    // The file answers the parent; it is not a result the user asked to save, so it is not announced.
    logger().set_severity(Severity::kWarning);
    results.save(task.results_path);
}

}  // namespace polygraphy
