// `polygraphy run --use-subprocess`: each runner of a RunJob in a process of its own, so that a
// backend that crashes or hangs fails its runner instead of the whole run.
//
// The parent (run_job_in_processes()) starts one child per runner with a command that describes the
// same job (the tool re-runs its own command line) and kRunnerProcessVariable set to the runner's
// index and a results file. The child builds the job's runners as run_job() does, runs that one over
// the job's data loader (generated inputs are the same in every child: they come from the seed) and
// writes its RunResults in Polygraphy's JSON; the parent reads them back and goes on as run_job()
// does (saving, loading, post-processing, comparing). Nothing but plain files and exit statuses
// crosses the process boundary, so any runner, an extension module's included, can run this way.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "polygraphy/job/run_job.h"

namespace polygraphy {

/// How run_job_in_processes() starts the runner processes.
struct RunnerProcessOptions {
    /// A command (argv; argv[0] an executable path or a name searched in PATH) that runs the same
    /// job again and, in a runner process, calls run_runner_process(). `polygraphy run` gives its
    /// own command line.
    std::vector<std::string> command = {};
    /// A runner process still running after this many seconds is killed and its runner fails; none:
    /// no limit (as Polygraphy, which never times out).
    std::optional<double> timeout_seconds = std::nullopt;
};

/// The environment variable that makes a process a runner process: "<runner index>:<results file>".
inline constexpr const char* kRunnerProcessVariable = "POLYGRAPHY_RUNNER_PROCESS";

/// Whether this process was started by run_job_in_processes() (kRunnerProcessVariable is set).
bool is_runner_process();

/// Executes `job` as run_job() does, except that runner i runs in a child process (`options.command`
/// with kRunnerProcessVariable naming i), one after another. What a child prints is passed on when
/// it ends. A child that crashes, exits with a non-zero status, runs past the timeout or writes no
/// results fails its runner: instead of its output, one error names the runner, how its process
/// ended and the last 20 lines it printed; the other runners' results are compared as usual, and the
/// result does not pass. A job
/// without runners is run_job(job). Throws as run_job() does for the rest of the job, and
/// PolygraphyException when a child cannot be started (then nothing was compared).
RunJobResult run_job_in_processes(const RunJob& job, const RunnerProcessOptions& options);

/// The runner process's side: builds the runners of `job` (all of them, so that names are numbered
/// as in one process), runs the one kRunnerProcessVariable names over the job's data loader (only
/// runner 0 saves the inputs of --save-inputs) and writes its results to the file named there. Does
/// nothing else: no saving or loading of results, no comparison. Throws UsageError when this is not
/// a runner process or the variable is malformed, and what the runner throws.
void run_runner_process(const RunJob& job);

}  // namespace polygraphy
