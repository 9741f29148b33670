// The `polygraphy` command: top-level parsing, tool dispatch, exit statuses.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace polygraphy::tools {

/// Runs `polygraphy` with `argv` (argv[0] is the program as invoked). Extension modules are loaded
/// first (load_extension_modules(), once per process; refused ones are `[W]` warnings). Help and version text go to
/// `out`, argparse errors (usage + "<prog>: error: ...") to `err`; everything else is logged.
/// Exit statuses, as Polygraphy's:
/// - 0 success, help or version;
/// - 1 tool failure: PolygraphyException (printed `[!] <message>`), a failed comparison, unknown
///   options (`[E] Unrecognized Options: ['--x']`), InternalError, out of memory, any other error
///   (one line, never a stack trace);
/// - 2 argparse errors: bad choice, missing value, invalid int/float, ambiguous prefix, missing
///   required argument, unknown tool. Errors found while a group interprets a value (a malformed
///   --atol, a bad --val-range) are Polygraphy's `G_LOGGER.critical` errors: `[!]`, status 1.
/// Tools with start/end logging print `[I] RUNNING | Command: <argv>` after their options are
/// parsed and `[I] PASSED | Runtime: 0.123s | Command: ...` or `[E] FAILED | ...` last.
int cli_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

/// The OpenMP settings the `polygraphy` command gives itself before libgomp starts (it sets them
/// and starts itself again), for the built-in runtime's kernels:
/// - OMP_WAIT_POLICY=passive: libgomp's default spinning makes a multi-thread run on a machine
///   whose cores are busy elsewhere many times slower;
/// - GOMP_SPINCOUNT=300000, a spin of a few milliseconds at most before sleeping: waking sleeping
///   threads for each of an inference's parallel regions costs more on idle cores, and shorter
///   spins still lose time. It is left out only when argv gives --ref-threads N (the last one
///   counts) above `idle_cores()`, the cores other processes leave idle as the command starts
///   (asked only for N of 2 or more): the default thread count (0) gets 1 thread on a busy machine,
///   so the spin costs nothing there, but a count the user gives is kept, and on a busy machine the
///   spin makes runs slower.
/// The figures are in BENCHMARKS.md ("Thread defaults").
/// Nothing when `getenv("OMP_WAIT_POLICY")` names a policy; no spin count when GOMP_SPINCOUNT is set.
/// Nothing either for a command that does not run the built-in runtime's kernels on OpenMP threads
/// (no subcommand, -h/--help, `inspect` other than `capability`, `check`): those start once, not twice.
std::vector<std::pair<std::string, std::string>> openmp_settings(const std::vector<std::string>& argv,
                                                                 const std::function<const char*(const char*)>& getenv,
                                                                 const std::function<int()>& idle_cores);

/// The cores other processes leave idle now, at least 1 (from /proc/loadavg; every core where it
/// cannot be read): openmp_settings()'s `idle_cores`.
int idle_cores_now();

}  // namespace polygraphy::tools
