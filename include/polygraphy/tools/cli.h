// The `polygraphy` command: top-level parsing, tool dispatch, exit statuses.
#pragma once

#include <ostream>
#include <string>
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

}  // namespace polygraphy::tools
