// Running a child process with captured output and a time limit (the `--check` commands of `debug`).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace polygraphy {

/// How a child process ended and what it printed.
struct ProcessResult {
    /// Python's subprocess returncode: the exit status, or -N when signal N killed the child
    /// (so a segfault is -11). Meaningless when timed_out.
    int returncode = 0;
    bool timed_out = false;   ///< killed after the time limit
    std::string stdout_text;  ///< what the child printed on stdout
    std::string stderr_text;  ///< what the child printed on stderr
    /// True when a stream was longer than the capture limit and was cut (its start is kept).
    bool truncated = false;

    /// Whether a signal ended the child.
    bool killed_by_signal() const { return !timed_out && returncode < 0; }
    /// "exit status 3", "killed by signal 11 (Segmentation fault)", "timed out after 2.5 s".
    std::string describe() const;
    double timeout_seconds = 0.0;  ///< the limit that was exceeded (when timed_out)
};

/// Runs `argv` (argv[0] is searched in PATH, as execvp does) with stdin from /dev/null and both
/// output streams captured, in its own process group. When `timeout_seconds` is given and passes,
/// the whole process group is killed (SIGKILL) and the result says timed_out. Each stream keeps at
/// most `max_capture_bytes` (the rest is read and dropped). A child that crashes or is killed is a
/// result, never an exception. Throws PolygraphyException naming the command when it cannot be
/// started (not found, not executable, empty argv) and for a timeout that is not positive.
/// While the command runs, SIGINT/SIGTERM to this process (unless ignored) kill the command's
/// group first and are then raised again, so interrupting the caller never orphans the command.
/// Call from one thread at a time (signal dispositions are process-wide). `environment_overrides`
/// ("NAME=value" entries) are set in the child's environment, replacing variables of the same name.
ProcessResult run_process(const std::vector<std::string>& argv, std::optional<double> timeout_seconds = std::nullopt,
                          std::size_t max_capture_bytes = std::size_t{64} << 20,
                          const std::vector<std::string>& environment_overrides = {});

}  // namespace polygraphy
