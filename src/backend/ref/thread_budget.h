// How many threads the built-in runtime's default (--ref-threads 0) uses for one run: the cores that
// other processes leave idle. OpenMP's fork-join regions wait for every thread, so a worker that
// the scheduler leaves off a busy core stalls each of the regions of an inference (BENCHMARKS.md,
// "Thread defaults").
#pragma once

#include <optional>
#include <string>

namespace polygraphy::ref {

/// Threads to use out of `cores` when `others_runnable` threads of other processes are ready to
/// run: the cores they leave idle, at least 1.
int idle_core_threads(int cores, int others_runnable);

/// The runnable count from the text of /proc/loadavg (its fourth field, "runnable/total");
/// nullopt when the text does not have that form.
std::optional<int> runnable_from_loadavg(const std::string& text);

/// Whether a /proc/<pid>/task/<tid>/stat line says the thread is running or ready to run.
bool stat_says_running(const std::string& text);

/// The other runnable threads to plan for, from two readings in a row (below zero: unreadable): the
/// smaller, so that a reading that catches a short-lived task (a kernel worker, a process starting
/// or ending) does not cost the next 100 ms half their threads, while a lasting load counts from
/// its second reading on.
int lasting_others(int previous, int current);

/// idle_core_threads(cores, lasting_others() of the last two readings of the machine's runnable
/// count from /proc/loadavg minus this process's runnable threads, whose OpenMP workers may still
/// spin after the previous run), read at most every 100 ms (the first call reads twice, 2 ms
/// apart); `cores` when /proc/loadavg cannot be read (not Linux). Thread-safe.
int threads_for_current_load(int cores);

}  // namespace polygraphy::ref
