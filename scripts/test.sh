#!/usr/bin/env bash
# README Quick start, second command: install what is missing, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build -j"$(nproc)" --output-on-failure
