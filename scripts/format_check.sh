#!/usr/bin/env bash
# Part of the test command: the C++ lines changed since the parent commit (committed or not) follow
# .clang-format. Only changed lines: files written before this check are reformatted when they are
# next edited, so that a commit's diff stays its own. Fix a failure with `git clang-format HEAD~1`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v git-clang-format >/dev/null 2>&1; then
  echo "[!] The formatting check needs clang-format (sudo apt-get install clang-format; scripts/setup.sh installs it)"
  exit 1
fi
if ! git rev-parse -q --verify HEAD~1 >/dev/null 2>&1; then
  echo "[I] Formatting check skipped: no git history here to say which lines changed"
  exit 0
fi
diff=$(git clang-format --binary clang-format --diff --extensions cpp,h HEAD~1 -- \
  src include tests fuzz bench examples python 2>&1 || true)
case "$diff" in
  "" | *"no modified files to format"* | *"clang-format did not modify any files"*)
    echo "[I] PASSED | the changed C++ lines follow .clang-format"
    exit 0
    ;;
esac
printf '%s\n' "$diff" | head -60
echo "[!] FAILED | changed C++ lines do not follow .clang-format (fix: git clang-format HEAD~1)"
exit 1
