#!/usr/bin/env bash
# README Quick start, second command: install what is missing, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build -j"$(nproc)" --output-on-failure
# Every fuzz target for a few seconds under ASan/UBSan (issue 9); the long run is scripts/fuzz_long.sh.
FUZZ_SECONDS="${FUZZ_SECONDS:-8}" scripts/fuzz_smoke.sh
