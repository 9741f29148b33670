#!/usr/bin/python3
"""Time the Python binding adds to runner.infer (issue 20, item 5), beside the C++ figure of the same run.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_binding_bench.py [--bench build/bench/onnxrt_bench]
                                                                            [--rounds R] [--iterations N]

The models are those of bench/onnxrt_bench's default run (a tiny Add on [1, 16]; an MLP 256-256-64-10 at
batch 1 and 64), exported from PyTorch (python3-torch) to ONNX files in a temporary folder, since the
Python API cannot build models. For each model and round, in turn: onnxrt_bench on the file (one round
of N iterations: median of a direct ONNX-Runtime Run loop and of OnnxrtRunner::infer in C++), then N
calls of OnnxrtRunner.infer from Python (median). Both use one intra-op thread. Prints the medians over
the rounds and the binding's added time (Python infer - C++ infer), against the target: at most 5% or
50 us.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

from polygraphy.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
from polygraphy.logger import G_LOGGER


class TinyAdd(torch.nn.Module):
    def forward(self, x):
        return x + x


def small_mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
    )


def export_models(folder):
    """(label, path, input shape) of each benchmarked model, exported to `folder`."""
    torch.manual_seed(0)
    models = [
        ("tiny_add", TinyAdd(), (1, 16)),
        ("small_mlp_b1", small_mlp(), (1, 256)),
        ("small_mlp_b64", small_mlp(), (64, 256)),
    ]
    exported = []
    for label, module, shape in models:
        path = os.path.join(folder, label + ".onnx")
        torch.onnx.export(
            module.eval(), torch.zeros(shape), path, input_names=["x"], output_names=["y"], opset_version=13
        )
        exported.append((label, path, shape))
    return exported


CPP_LINE = re.compile(r"direct Run\s+([\d.]+) ms \| OnnxrtRunner::infer\s+([\d.]+) ms")


def cpp_round(bench, path, iterations):
    """Medians (direct Run, OnnxrtRunner::infer) in ms from one onnxrt_bench round on `path`."""
    output = subprocess.run(
        [bench, "--rounds", "1", "--iterations", str(iterations), "--threads", "1", path],
        check=True, capture_output=True, text=True,
    ).stdout
    match = CPP_LINE.search(output)
    if not match:
        sys.exit(f"[!] unexpected onnxrt_bench output:\n{output}")
    return float(match.group(1)), float(match.group(2))


def python_round(runner, feed, iterations):
    """Median ms of `iterations` runner.infer calls from Python."""
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        runner.infer(feed)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bench/onnxrt_bench", help="the onnxrt_bench executable")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--iterations", type=int, default=500)
    args = parser.parse_args()
    G_LOGGER.severity = G_LOGGER.WARNING

    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as folder:
        for label, path, shape in export_models(folder):
            feed = {"x": np.random.default_rng(0).random(shape, dtype=np.float32)}
            direct, cpp_infer, py_infer = [], [], []
            with OnnxrtRunner(SessionFromOnnx(path, intra_op_num_threads=1)) as runner:
                python_round(runner, feed, 50)  # warm-up
                for _ in range(args.rounds):
                    direct_ms, cpp_ms = cpp_round(args.bench, path, args.iterations)
                    direct.append(direct_ms)
                    cpp_infer.append(cpp_ms)
                    py_infer.append(python_round(runner, feed, args.iterations))
            direct_ms, cpp_ms, py_ms = (statistics.median(values) for values in (direct, cpp_infer, py_infer))
            added_us = (py_ms - cpp_ms) * 1e3
            added_pct = 100.0 * (py_ms - cpp_ms) / cpp_ms
            verdict = "within target" if added_pct <= 5.0 or added_us <= 50.0 else "OVER TARGET"
            print(
                f"{label:<14} direct Run {direct_ms:8.4f} ms | C++ OnnxrtRunner::infer {cpp_ms:8.4f} ms | "
                f"Python runner.infer {py_ms:8.4f} ms | binding adds {added_us:+7.1f} us ({added_pct:+5.1f}%) {verdict}"
            )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
