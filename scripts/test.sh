#!/usr/bin/env bash
# README Quick start, second command: install what is missing, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/format_check.sh  # the C++ lines changed since the parent commit follow .clang-format
scripts/build.sh
ctest --test-dir build -j"$(nproc)" --output-on-failure
# Every fuzz target under ASan/UBSan, a fixed number of executions from a fixed seed over the
# committed regression corpus (issue 33: CI's result depends on the code alone); the long random
# campaign is scripts/fuzz_long.sh.
scripts/fuzz_smoke.sh
