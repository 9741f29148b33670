#!/usr/bin/env bash
# Runs one folder of examples/python/ as its README does (CTest: python.examples.<folder>): in a fresh
# folder holding the generated example models (identity.onnx, example_cnn.onnx), every *.py of the
# example in name order must exit 0; then every JSON file they saved must load in `polygraphy inspect data`. Exit 77 (skipped) when the example
# uses ONNX-Runtime and this build cannot load it.
#
# usage: run_python_example.sh EXAMPLE_DIR MODELS_DIR WORK_DIR PYTHON POLYGRAPHY_CLI
set -euo pipefail

example=$(realpath "$1")
models=$(realpath "$2")
work=$3
python=$4
polygraphy=$5

rm -rf "$work"
mkdir -p "$work"
cp "$models"/*.onnx "$work/"
cd "$work"

if grep -qF "polygraphy.backend.onnxrt" "$example"/*.py &&
    ! "$python" -c "from polygraphy.backend.onnxrt import SessionFromOnnx; SessionFromOnnx('identity.onnx')()" >/dev/null 2>&1; then
    echo "ONNX-Runtime is not available: skipped"
    exit 77
fi

for script in "$example"/*.py; do
    echo "==== $(basename "$script")"
    "$python" "$script"
done
for saved in *.json; do
    [[ -e "$saved" ]] || continue
    echo "==== polygraphy inspect data $saved"
    "$polygraphy" inspect data "$saved"
done
