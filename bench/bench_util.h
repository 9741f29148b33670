// Helpers shared by the benchmark programs: medians, generated feeds, timed child processes.
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "polygraphy/common/exception.h"
#include "polygraphy/common/tensor.h"
#include "polygraphy/common/tensor_metadata.h"

extern "C" char** environ;

namespace polygraphy::bench {

inline double median(std::vector<double> values) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// Inputs for declared inputs: dynamic dims -> 1; floating inputs uniform in [0, 1) (seed 1),
/// others zero.
inline TensorMap make_feed(const TensorMetadata& metadata) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    TensorMap feed;
    for (const auto& [name, entry] : metadata) {
        if (!entry.dtype || !entry.shape) throw PolygraphyException("input " + name + " has no tensor type/shape");
        Shape shape;
        for (const Dim& dim : *entry.shape) shape.push_back(dim.is_dynamic() ? 1 : dim.value);
        Tensor tensor(*entry.dtype, shape);
        if (*entry.dtype == DataType::kFloat32 || *entry.dtype == DataType::kFloat64 ||
            *entry.dtype == DataType::kFloat16) {
            std::vector<double> values(static_cast<std::size_t>(tensor.numel()));
            for (double& value : values) value = uniform(rng);
            tensor = Tensor::from_doubles(*entry.dtype, shape, values);
        }
        feed.set(name, tensor);
    }
    return feed;
}

/// Runs `argv` (argv[0] a path) to completion; returns its wall seconds from spawn to exit and
/// puts its stdout in `child_stdout` when given. Throws when it cannot start or exits non-zero.
inline double run_child(const std::vector<std::string>& argv, std::string* child_stdout = nullptr) {
    int fds[2];
    if (pipe(fds) != 0) throw PolygraphyException("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const auto start = std::chrono::steady_clock::now();
    const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (spawned != 0) {
        close(fds[0]);
        throw PolygraphyException("cannot start " + argv[0]);
    }
    std::string output;
    char buffer[4096];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) output.append(buffer, static_cast<std::size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw PolygraphyException(argv[0] + " failed:\n" + output);
    if (child_stdout) *child_stdout = output;
    return seconds;
}

}  // namespace polygraphy::bench
