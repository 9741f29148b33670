#!/usr/bin/env bash
# Configures and builds polygraphy into build/ (Release): every target, or only those given with
# --target NAME (the README's first command builds the CLI and the example-model generator only).
# Other arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
configure_args=()
while (($#)); do
  if [[ "$1" == --target && $# -ge 2 ]]; then
    targets+=(--target "$2")
    shift 2
  else
    configure_args+=("$1")
    shift
  fi
done
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${configure_args[@]}" >/dev/null
cmake --build build -j"$(nproc)" "${targets[@]}"
